// Package kafka is the driver for Kafka (kafka://), with franz-go.
package kafka
