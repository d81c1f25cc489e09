package main

import (
	"errors"
	"fmt"

	"github.com/cloudprofiler-go/cp/driver"
)

// checkSUT refuses a --sut that is not a broker endpoint, or that comes
// with agents of the user's own (their receivers name it themselves).
func checkSUT(sut string, remote, relay bool) error {
	switch {
	case sut == "":
		return nil
	case !driver.IsBroker(sut):
		return fmt.Errorf("--sut %q: want a broker endpoint, nats://HOST:PORT/SUBJECT, jetstream://HOST:PORT/SUBJECT, redis://HOST:PORT/KEY or kafka://HOST:PORT/TOPIC (a ZeroMQ system under test is --relay-input)", sut)
	case remote:
		return errors.New("--sut starts local agents on it: with agents of your own, start each receiver agent with --connect BROKER-ENDPOINT instead")
	case relay:
		return errors.New("--sut and --relay-input: a broker is the whole path, give one")
	}
	if _, err := driver.Parse(sut); err != nil {
		return fmt.Errorf("--sut: %w", err)
	}
	return nil
}
