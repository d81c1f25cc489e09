package brokers

import (
	"github.com/cloudprofiler-go/cp/driver"
	"github.com/cloudprofiler-go/cp/driver/kafka"
	"github.com/cloudprofiler-go/cp/driver/nats"
	"github.com/cloudprofiler-go/cp/driver/redis"
)

// All are the broker drivers dgsend and dgrecv are built with: all
// four schemes (nats, jetstream, redis, kafka), since either may be asked,
// as a process or as an agent, to publish into or consume from any of
// them. cpsweep registers none: it drives agents and never talks to a
// broker's clients itself.
func All() driver.Registry {
	return driver.NewRegistry(nats.Driver{}, redis.Driver{}, kafka.Driver{})
}
