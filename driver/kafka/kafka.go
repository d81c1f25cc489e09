package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/cloudprofiler-go/cp/driver"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Kafka (franz-go): a producer hands each message to the client's buffer
// with TryProduce (a full buffer is driver.ErrFull, never a wait), with the acks
// and idempotence asked for; a consumer reads its topic (one partition, so
// one stream's order holds) in a consumer group of its own from the start.
// The topic is the harness's: it is deleted and created at every trial.

type kafkaProducer struct {
	cl     *kgo.Client
	topic  string
	window int
	mu     sync.Mutex
	free   [][]byte
	err    atomic.Pointer[error] // the first failed produce
	rec    sync.Pool
}

func kafkaAcks(e driver.Endpoint) []kgo.Opt {
	switch e.Acks {
	case "leader":
		return []kgo.Opt{kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite()}
	case "none":
		return []kgo.Opt{kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite()}
	}
	if !e.Idempotent {
		return []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite()}
	}
	return []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks())}
}

func newKafkaProducer(e driver.Endpoint) (*kafkaProducer, error) {
	opts := append([]kgo.Opt{kgo.SeedBrokers(e.Server), kgo.DefaultProduceTopic(e.Subject), kgo.MaxBufferedRecords(e.Window),
		kgo.ProducerLinger(e.Linger), kgo.RecordRetries(0), kgo.DialTimeout(driver.ConnectTimeout)}, append(kafkaAcks(e), kafkaAuth(e.Auth)...)...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka %s: %w", e.Server, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), driver.ConnectTimeout)
	defer cancel()
	if err := cl.Ping(ctx); err != nil {
		cl.Close()
		return nil, fmt.Errorf("connect to %s (kafka): %w", e.Server, err)
	}
	return &kafkaProducer{cl: cl, topic: e.Subject, window: e.Window}, nil
}

func (p *kafkaProducer) Publish(msg []byte) error {
	if err := p.err.Load(); err != nil {
		return *err
	}
	// Only this thread adds records, so below the window Produce cannot
	// block (TryProduce would report a full buffer only later, in its
	// promise, after the message was counted as sent).
	if p.cl.BufferedProduceRecords() >= int64(p.window) {
		return driver.ErrFull
	}
	p.mu.Lock()
	var b []byte
	if n := len(p.free); n > 0 {
		b, p.free = p.free[n-1][:0], p.free[:n-1]
	}
	p.mu.Unlock()
	r, _ := p.rec.Get().(*kgo.Record)
	if r == nil {
		r = new(kgo.Record)
	}
	*r = kgo.Record{Topic: p.topic, Value: append(b, msg...)}
	p.cl.Produce(context.Background(), r, p.done)
	return nil
}

// done is every record's promise: the first error is the broker's
// failure, and the record's buffer is reused.
func (p *kafkaProducer) done(r *kgo.Record, err error) {
	if err != nil {
		werr := fmt.Errorf("produce to %s: %w", p.topic, err)
		p.err.CompareAndSwap(nil, &werr)
	}
	p.mu.Lock()
	p.free = append(p.free, r.Value)
	p.mu.Unlock()
	p.rec.Put(r)
}

func (p *kafkaProducer) Flush(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := p.cl.Flush(ctx); err != nil {
		return fmt.Errorf("%d records to %s not acknowledged within %v: %w", p.cl.BufferedProduceRecords(), p.topic, timeout, err)
	}
	if err := p.err.Load(); err != nil {
		return *err
	}
	return nil
}

func (p *kafkaProducer) Close() { p.cl.Close() }

type kafkaConsumer struct {
	cl       *kgo.Client
	adm      *kadm.Client
	topic    string
	recs     []*kgo.Record // the lane's own: read by Next only
	next     int
	position atomic.Int64 // the offset after the last record handed out
}

func newKafkaConsumer(e driver.Endpoint) (*kafkaConsumer, error) {
	admCl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(e.Server), kgo.DialTimeout(driver.ConnectTimeout)}, kafkaAuth(e.Auth)...)...)
	if err != nil {
		return nil, fmt.Errorf("kafka %s: %w", e.Server, err)
	}
	adm := kadm.NewClient(admCl)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	// a group of its own: no offsets of an earlier trial
	group := fmt.Sprintf("cp-%d", time.Now().UnixNano())
	if e.Group != "" {
		// a job's topic: joined where the group left off, never deleted
		group = e.Group
		err = ensureTopic(ctx, adm, e.Subject)
	} else {
		err = freshTopic(ctx, adm, e)
	}
	if err != nil {
		admCl.Close()
		return nil, err
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(e.Server), kgo.ConsumeTopics(e.Subject), kgo.ConsumerGroup(group),
		// commits often: a group's lag, read from its commits, is what the sweep waits on between trials
		kgo.AutoCommitInterval(100 * time.Millisecond),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100 * time.Millisecond), kgo.DialTimeout(driver.ConnectTimeout)}, kafkaAuth(e.Auth)...)...)
	if err != nil {
		admCl.Close()
		return nil, fmt.Errorf("kafka %s: %w", e.Server, err)
	}
	return &kafkaConsumer{cl: cl, adm: adm, topic: e.Subject}, nil
}

// freshTopic makes the harness's own topic anew: a trial starts with an
// empty topic of one partition. Per-topic errors of the deletion (a topic
// that did not exist) are fine: creating it again says whether the broker
// can.
func freshTopic(ctx context.Context, adm *kadm.Client, e driver.Endpoint) error {
	if _, err := adm.DeleteTopics(ctx, e.Subject); err != nil {
		return fmt.Errorf("connect to %s (kafka): delete the last trial's topic %s: %w", e.Server, e.Subject, err)
	}
	if err := createTopic(ctx, adm, e.Subject); err != nil {
		return fmt.Errorf("kafka %s: create topic %s: %w", e.Server, e.Subject, err)
	}
	return nil
}

// ensureTopic makes topic (one partition) only where it is missing.
func ensureTopic(ctx context.Context, adm *kadm.Client, topic string) error {
	r, err := adm.CreateTopic(ctx, 1, 1, nil, topic)
	if err == nil {
		err = r.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("kafka: create topic %s: %w", topic, err)
	}
	return nil
}

// createTopic creates topic, retrying while the deletion of its previous
// incarnation completes.
func createTopic(ctx context.Context, adm *kadm.Client, topic string) error {
	for {
		r, err := adm.CreateTopic(ctx, 1, 1, nil, topic)
		if err == nil && r.Err == nil {
			return nil
		}
		if err == nil {
			err = r.Err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (c *kafkaConsumer) Next(wait time.Duration) ([]byte, error) {
	if c.next < len(c.recs) {
		r := c.recs[c.next]
		c.next++
		c.position.Store(r.Offset + 1)
		return r.Value, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	fs := c.cl.PollRecords(ctx, 1024)
	if fs.IsClientClosed() {
		return nil, errors.New("the driver.Kafka client is closed")
	}
	var ferr error
	fs.EachError(func(topic string, _ int32, err error) {
		if !errors.Is(err, context.DeadlineExceeded) && ferr == nil {
			ferr = fmt.Errorf("fetch %s: %w", topic, err)
		}
	})
	if ferr != nil {
		return nil, ferr
	}
	c.recs, c.next = fs.Records(), 0
	if len(c.recs) == 0 {
		return nil, driver.ErrTimeout
	}
	return c.Next(wait)
}

// Lag is the topic's end offset less the consumer's position: what the
// broker holds that this consumer has not read (the group's committed
// offsets trail by the commit interval, so they are not used).
func (c *kafkaConsumer) Lag() (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), driver.LagTimeout)
	defer cancel()
	ends, err := c.adm.ListEndOffsets(ctx, c.topic)
	if err != nil {
		return 0, err
	}
	o, ok := ends.Lookup(c.topic, 0)
	if !ok || o.Err != nil {
		return 0, fmt.Errorf("end offset of %s: %v", c.topic, o.Err)
	}
	return max(o.Offset-c.position.Load(), 0), nil
}

func (c *kafkaConsumer) Dropped() uint64 { return 0 }

func (c *kafkaConsumer) Close() {
	c.cl.Close()
	c.adm.Close()
}

// kafkaAuth is the SASL/PLAIN option of a client with credentials (from
// the environment, driver.CredentialsFromEnv).
func kafkaAuth(c driver.Credentials) []kgo.Opt {
	if c.User == "" && c.Password == "" {
		return nil
	}
	return []kgo.Opt{kgo.SASL(plain.Auth{User: c.User, Pass: c.Password}.AsMechanism())}
}

// Driver is the Kafka driver: kafka://.
type Driver struct{}

// Schemes implements driver.Driver.
func (Driver) Schemes() []string { return []string{driver.Kafka} }

// NewProducer implements driver.Driver.
func (Driver) NewProducer(e driver.Endpoint) (driver.Producer, error) { return newKafkaProducer(e) }

// NewConsumer implements driver.Driver.
func (Driver) NewConsumer(e driver.Endpoint) (driver.Consumer, error) { return newKafkaConsumer(e) }

// Ensure implements driver.Admin: the topic, one partition, where missing.
func (Driver) Ensure(e driver.Endpoint) error {
	return withAdmin(e, func(ctx context.Context, adm *kadm.Client) error { return ensureTopic(ctx, adm, e.Subject) })
}

// Group implements driver.Admin: the group's lag, the topic's end
// offsets and its ID (a topic deleted and made again has a new one).
func (Driver) Group(e driver.Endpoint) (g driver.GroupState, err error) {
	err = withAdmin(e, func(ctx context.Context, adm *kadm.Client) error {
		topics, err := adm.ListTopics(ctx, e.Subject)
		if err != nil {
			return err
		}
		t, ok := topics[e.Subject]
		switch {
		case !ok:
			return fmt.Errorf("no topic %s", e.Subject)
		case t.Err != nil:
			return fmt.Errorf("topic %s: %w", e.Subject, t.Err)
		}
		if t.ID != (kadm.TopicID{}) {
			g.Identity = "topic ID " + t.ID.String()
		}
		ends, err := adm.ListEndOffsets(ctx, e.Subject)
		if err != nil {
			return err
		}
		ends.Each(func(o kadm.ListedOffset) { g.Added += o.Offset })
		g.Lag, err = groupLag(ctx, adm, e)
		return err
	})
	return g, err
}

// groupLag is the topic's end offsets less the group's committed ones
// (from the start, where it committed none).
func groupLag(ctx context.Context, adm *kadm.Client, e driver.Endpoint) (int64, error) {
	lags, err := adm.Lag(ctx, e.Group)
	if err != nil {
		return 0, err
	}
	g, ok := lags[e.Group]
	switch {
	case !ok || errors.Is(g.DescribeErr, kerr.GroupIDNotFound) || g.State == "Dead":
		// a group that never ran has read nothing: it starts at the
		// first offset (docs/sut.md), so everything stored is its lag
		return storedRecords(ctx, adm, e.Subject)
	case g.DescribeErr != nil:
		return 0, fmt.Errorf("describe group %s: %w", e.Group, g.DescribeErr)
	case g.FetchErr != nil:
		return 0, fmt.Errorf("offsets of group %s: %w", e.Group, g.FetchErr)
	}
	var lag int64
	for _, p := range g.Lag[e.Subject] {
		if p.Err != nil {
			return 0, fmt.Errorf("lag of group %s on %s/%d: %w", e.Group, e.Subject, p.Partition, p.Err)
		}
		lag += p.Lag
	}
	return lag, nil
}

// storedRecords is what topic holds: its end offsets less its start ones.
func storedRecords(ctx context.Context, adm *kadm.Client, topic string) (int64, error) {
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return 0, err
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return 0, err
	}
	var n int64
	var ferr error
	ends.Each(func(end kadm.ListedOffset) {
		start, ok := starts.Lookup(topic, end.Partition)
		switch {
		case end.Err != nil || !ok || start.Err != nil:
			ferr = fmt.Errorf("offsets of %s/%d: %v %v", topic, end.Partition, end.Err, start.Err)
		default:
			n += end.Offset - start.Offset
		}
	})
	return n, ferr
}

func withAdmin(e driver.Endpoint, f func(context.Context, *kadm.Client) error) error {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(e.Server), kgo.DialTimeout(driver.ConnectTimeout)}, kafkaAuth(e.Auth)...)...)
	if err != nil {
		return fmt.Errorf("kafka %s: %w", e.Server, err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), driver.ConnectTimeout)
	defer cancel()
	return f(ctx, kadm.NewClient(cl))
}
