package redis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/cloudprofiler-go/cp/driver"
	"github.com/cloudprofiler-go/cp/internal/termsafe"

	"github.com/redis/go-redis/v9"
)

// Redis Streams: a producer pipelines XADDs from a writer goroutine (the
// emission loop only queues); a consumer reads with XREADGROUP in batches
// from the group "cp" and, with ack=explicit, acknowledges each batch with
// one XACK. The stream key is the harness's own: it is deleted at the
// start of every trial.

const redisGroup = "cp"

func redisClient(e driver.Endpoint) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: e.Server, Username: e.Auth.User, Password: e.Auth.Password, DialTimeout: driver.ConnectTimeout, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second,
		// a broker gone mid-trial fails the trial; retrying would hide it
		MaxRetries: -1, PoolSize: 4})
}

type redisProducer struct {
	c      *redis.Client
	key    string
	maxLen int64
	field  string
	window int

	mu       sync.Mutex
	queue    [][]byte // copies waiting for the writer
	free     [][]byte // their buffers, for reuse
	inflight int      // queued or being written
	err      error    // the first write error: the broker failed
	wake     chan struct{}
	done     chan struct{}
	wrote    chan struct{} // the writer has returned
}

func newRedisProducer(e driver.Endpoint) (*redisProducer, error) {
	c := redisClient(e)
	ctx, cancel := context.WithTimeout(context.Background(), driver.ConnectTimeout)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		return nil, fmt.Errorf("connect to %s (redis): %w", e.Server, err)
	}
	p := &redisProducer{c: c, key: e.Subject, maxLen: e.MaxLen, field: e.Field, window: e.Window,
		wake: make(chan struct{}, 1), done: make(chan struct{}), wrote: make(chan struct{})}
	go p.writer()
	return p, nil
}

func (p *redisProducer) Publish(msg []byte) error {
	p.mu.Lock()
	if p.err != nil {
		err := p.err
		p.mu.Unlock()
		return err
	}
	if p.inflight >= p.window {
		p.mu.Unlock()
		return driver.ErrFull
	}
	var b []byte
	if n := len(p.free); n > 0 {
		b, p.free = p.free[n-1][:0], p.free[:n-1]
	}
	p.queue = append(p.queue, append(b, msg...))
	p.inflight++
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
	return nil
}

// writer sends what is queued as one pipeline of XADDs at a time.
func (p *redisProducer) writer() {
	defer close(p.wrote)
	var batch [][]byte
	for {
		select {
		case <-p.wake:
		case <-p.done:
			return
		}
		for {
			p.mu.Lock()
			batch, p.queue = p.queue, batch[:0]
			p.mu.Unlock()
			if len(batch) == 0 {
				break
			}
			err := p.write(batch)
			p.mu.Lock()
			if err != nil && p.err == nil {
				p.err = fmt.Errorf("XADD to %s: %w", p.key, err)
			}
			p.inflight -= len(batch)
			p.free = append(p.free, batch...)
			p.mu.Unlock()
		}
	}
}

func (p *redisProducer) write(batch [][]byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pipe := p.c.Pipeline()
	for _, m := range batch {
		pipe.XAdd(ctx, &redis.XAddArgs{Stream: p.key, MaxLen: p.maxLen, Approx: p.maxLen > 0, Values: []any{p.field, m}})
	}
	_, err := pipe.Exec(ctx)
	return err
}

func (p *redisProducer) Flush(timeout time.Duration) error {
	for deadline := time.Now().Add(timeout); ; time.Sleep(time.Millisecond) {
		p.mu.Lock()
		n, err := p.inflight, p.err
		p.mu.Unlock()
		switch {
		case err != nil:
			return err
		case n == 0:
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("%d XADDs to %s not written within %v", n, p.key, timeout)
		}
	}
}

func (p *redisProducer) Close() {
	close(p.done)
	<-p.wrote
	p.c.Close()
}

type redisConsumer struct {
	c               *redis.Client
	key, field      string
	group, consumer string
	ack             bool
	batch           []redis.XMessage // the lane's own: read by Next only
	next            int
}

func newRedisConsumer(e driver.Endpoint) (*redisConsumer, error) {
	c := redisClient(e)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	group, consumer := redisGroup, "lane"
	if e.Group != "" {
		// a job's stream: joined where the group left off, never deleted;
		// each consumer of the group has a name of its own
		group, consumer = e.Group, fmt.Sprintf("%s-%d-%08x", e.Group, os.Getpid(), rand.Uint32())
		if err := ensureGroup(ctx, c, e.Subject, group); err != nil {
			c.Close()
			return nil, fmt.Errorf("redis %s: %w", e.Server, err)
		}
	} else {
		// A trial starts with an empty stream and a new group.
		if err := c.Del(ctx, e.Subject).Err(); err != nil {
			c.Close()
			return nil, fmt.Errorf("connect to %s (redis): remove the last trial's stream %s: %w", e.Server, e.Subject, err)
		}
		if err := c.XGroupCreateMkStream(ctx, e.Subject, redisGroup, "$").Err(); err != nil {
			c.Close()
			return nil, fmt.Errorf("redis %s: create the group %s on %s: %w", e.Server, redisGroup, e.Subject, err)
		}
	}
	return &redisConsumer{c: c, key: e.Subject, field: e.Field, group: group, consumer: consumer, ack: e.Ack == "explicit"}, nil
}

// ensureGroup makes the stream (if missing) and the group on it (if
// missing), from the stream's first entry: a job started after the
// senders still reads everything.
func ensureGroup(ctx context.Context, c *redis.Client, key, group string) error {
	err := c.XGroupCreateMkStream(ctx, key, group, "0").Err()
	if err != nil && !strings.HasPrefix(err.Error(), "BUSYGROUP") {
		return fmt.Errorf("create the group %s on %s: %w", group, key, err)
	}
	return nil
}

func (c *redisConsumer) Next(wait time.Duration) ([]byte, error) {
	if c.next < len(c.batch) {
		m := c.batch[c.next]
		c.next++
		return c.messageBytes(m)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait+5*time.Second)
	defer cancel()
	res, err := c.c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: c.group, Consumer: c.consumer, Streams: []string{c.key, ">"},
		Count: 512, Block: max(wait, time.Millisecond), NoAck: !c.ack}).Result()
	if errors.Is(err, redis.Nil) || (err == nil && (len(res) == 0 || len(res[0].Messages) == 0)) {
		return nil, driver.ErrTimeout
	}
	if err != nil {
		return nil, fmt.Errorf("XREADGROUP on %s: %w", c.key, err)
	}
	c.batch, c.next = res[0].Messages, 0
	if c.ack {
		ids := make([]string, len(c.batch))
		for i, m := range c.batch {
			ids[i] = m.ID
		}
		if err := c.c.XAck(ctx, c.key, c.group, ids...).Err(); err != nil {
			return nil, fmt.Errorf("XACK on %s: %w", c.key, err)
		}
	}
	return c.Next(wait)
}

// messageBytes is the payload of a stream entry: its field (d, or the
// endpoint's field=). An entry without it is one malformed message of a
// job's, not the end of the lane.
func (c *redisConsumer) messageBytes(m redis.XMessage) ([]byte, error) {
	s, ok := m.Values[c.field].(string)
	if !ok {
		return nil, fmt.Errorf("%w: stream entry %.40s has no field %s (name the job's with field=NAME)", driver.ErrNoPayload, termsafe.Escape(m.ID), c.field)
	}
	return []byte(s), nil
}

func (c *redisConsumer) Lag() (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), driver.LagTimeout)
	defer cancel()
	return groupLag(ctx, c.c, c.key, c.group)
}

// groupLag is the entries of key not yet delivered to group, and
// delivered but not acknowledged.
func groupLag(ctx context.Context, c *redis.Client, key, group string) (int64, error) {
	groups, err := c.XInfoGroups(ctx, key).Result()
	if err != nil {
		return 0, err
	}
	for _, g := range groups {
		if g.Name == group {
			if g.Lag < 0 {
				// Redis cannot tell after entries were deleted or trimmed
				// past the group's position
				return 0, fmt.Errorf("redis cannot tell the group %s's lag on %s (entries were trimmed or deleted under it)", group, key)
			}
			return g.Lag + g.Pending, nil
		}
	}
	return 0, fmt.Errorf("the group %s on %s is gone", group, key)
}

func (c *redisConsumer) Dropped() uint64 { return 0 }
func (c *redisConsumer) Close()          { c.c.Close() }

// Driver is the Redis Streams driver: redis://.
type Driver struct{}

// Schemes implements driver.Driver.
func (Driver) Schemes() []string { return []string{driver.Redis} }

// NewProducer implements driver.Driver.
func (Driver) NewProducer(e driver.Endpoint) (driver.Producer, error) { return newRedisProducer(e) }

// NewConsumer implements driver.Driver.
func (Driver) NewConsumer(e driver.Endpoint) (driver.Consumer, error) { return newRedisConsumer(e) }

// Ensure implements driver.Admin. A Redis stream exists once written to
// or once a group is made on it: with a group, the stream and the group
// are made where missing; without one, XADD makes the stream.
func (Driver) Ensure(e driver.Endpoint) error {
	if e.Group == "" {
		return nil
	}
	c := redisClient(e)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), driver.ConnectTimeout)
	defer cancel()
	return ensureGroup(ctx, c, e.Subject, e.Group)
}

// Group implements driver.Admin: the group's lag, and the stream's
// entries-added (Redis keeps no creation time or ID of a stream or a
// group, so a stream made again is seen only by that count going down).
func (Driver) Group(e driver.Endpoint) (driver.GroupState, error) {
	c := redisClient(e)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), driver.LagTimeout)
	defer cancel()
	info, err := c.XInfoStream(ctx, e.Subject).Result()
	if err != nil {
		return driver.GroupState{}, fmt.Errorf("stream %s: %w", e.Subject, err)
	}
	lag, err := groupLag(ctx, c, e.Subject, e.Group)
	return driver.GroupState{Lag: lag, Added: info.EntriesAdded}, err
}
