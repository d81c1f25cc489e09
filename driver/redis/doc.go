// Package redis is the driver for Redis Streams (redis://), with go-redis.
package redis
