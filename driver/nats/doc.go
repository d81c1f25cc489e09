// Package nats is the driver for NATS: core NATS (nats://) and JetStream
// (jetstream://), with the nats.go client.
package nats
