package driver

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cloudprofiler-go/cp/internal/redact"
	"github.com/cloudprofiler-go/cp/wire/jsonev"
)

// Drivers by endpoint scheme.
const (
	NATS      = "nats"      // core NATS: at most once, no acks; a slow consumer loses messages
	JetStream = "jetstream" // JetStream: persisted, acked publishes, a pull consumer
	Redis     = "redis"     // Redis Streams: pipelined XADD, XREADGROUP in a consumer group
	Kafka     = "kafka"     // Kafka (franz-go): buffered produce with acks, a consumer group
)

// Errors of producers and consumers.
var (
	ErrFull    = errors.New("the in-flight window is full")
	ErrTimeout = errors.New("no message within the wait")
)

// Endpoint is a parsed broker endpoint.
type Endpoint struct {
	Driver  string
	Server  string // the client's server URL: nats://HOST:PORT
	Subject string
	// Window bounds what is in flight: bytes buffered in the client (core
	// NATS) or publishes not yet acknowledged (JetStream).
	Window int
	// JetStream only.
	Storage string // file or memory
	// JetStream and Redis.
	Ack string // none or explicit: the consumer acknowledges each message
	// Redis only: XADD MAXLEN ~ N trims the stream (0: no limit); entries
	// trimmed before they are read are lost, and counted as loss.
	MaxLen int64
	// Field is the stream entry's field that holds a message (Redis
	// only: field=NAME, DefaultField when not given).
	Field string
	// Kafka only.
	Acks       string        // all, leader or none
	Idempotent bool          // with acks=all: idempotent produce (the default)
	Linger     time.Duration // the producer's linger
	// Group is a consumer group (Kafka, Redis) or durable consumer
	// (JetStream) that is not the harness's own: a job's on its input, or
	// the receiver's on a job's output. A consumer in a group joins it
	// where it left off, creates the stream, key or topic only where it is
	// missing, and never deletes one: a job may be reading or writing it.
	// Without a group the stream is the harness's, made anew for a trial.
	Group string
	// Auth is from the environment (CredentialsFromEnv), never the URL.
	Auth Credentials `json:"-"`
	// Format is the messages' format: jsonev.FormatBucket (the wire
	// format, the default) or jsonev.FormatJSON (one event per message),
	// and Fields, with JSON, the mapping of a job's output fields.
	Format string
	Fields jsonev.Fields
}

// DefaultField is the field of a Redis stream entry that holds a message
// when the endpoint names none.
const DefaultField = "d"

// ErrNoPayload is a consumer's answer for a message that carries no
// payload where the endpoint says (a Redis entry without its field): one
// malformed message, counted and skipped, not the broker's failure.
var ErrNoPayload = errors.New("a message without its payload")

// JSON says whether the endpoint's messages are JSON events.
func (e Endpoint) JSON() bool { return e.Format == jsonev.FormatJSON }

// JSONEndpoint is a broker endpoint with format=json, parsed (false: a
// ZeroMQ endpoint, one in buckets, or one that does not parse, which
// Parse's callers refuse on their own).
func JSONEndpoint(endpoint string) (Endpoint, bool) {
	if !IsBroker(endpoint) {
		return Endpoint{}, false
	}
	e, err := Parse(endpoint)
	return e, err == nil && e.JSON()
}

// IsBroker says whether an endpoint names a broker driver.
func IsBroker(endpoint string) bool {
	scheme, _, ok := strings.Cut(endpoint, "://")
	return ok && (scheme == NATS || scheme == JetStream || scheme == Redis || scheme == Kafka)
}

// Defaults of the options.
const (
	DefaultCoreWindow  = 64 << 20 // bytes in the producer's client not yet written (the consumer's queue is nats.CoreQueue messages)
	DefaultJSWindow    = 4096     // unacknowledged publishes
	DefaultRedisWindow = 4096     // XADDs queued or being written
	DefaultKafkaWindow = 10000    // records buffered in the client (franz-go's default)
)

// Parse reads DRIVER://HOST:PORT/SUBJECT?option=value. Credentials in the
// URL are refused: endpoints are recorded in results and logs; they come
// from the environment (CredentialsFromEnv) instead.
func Parse(endpoint string) (Endpoint, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return Endpoint{}, fmt.Errorf("broker endpoint: %w", err)
	}
	if err := redact.CheckURL("broker endpoint", endpoint); err != nil {
		return Endpoint{}, err
	}
	auth, err := CredentialsFromEnv()
	if err != nil {
		return Endpoint{}, err
	}
	e := Endpoint{Driver: u.Scheme, Subject: strings.TrimPrefix(u.Path, "/"), Storage: "file", Ack: "none", Auth: auth,
		Format: jsonev.FormatBucket, Fields: jsonev.Defaults()}
	switch u.Scheme {
	case NATS:
		e.Window = DefaultCoreWindow
	case JetStream:
		e.Window = DefaultJSWindow
	case Redis:
		e.Window, e.Field = DefaultRedisWindow, DefaultField
	case Kafka:
		e.Window, e.Acks, e.Idempotent = DefaultKafkaWindow, "all", true
	default:
		return Endpoint{}, fmt.Errorf("broker endpoint %q: the scheme is not a driver (nats, jetstream, redis or kafka)", endpoint)
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil || host == "" || port == "" {
		return Endpoint{}, fmt.Errorf("broker endpoint %q: want %s://HOST:PORT/SUBJECT", endpoint, u.Scheme)
	}
	e.Server = "nats://" + u.Host
	if e.Driver == Redis || e.Driver == Kafka {
		e.Server = u.Host
	}
	if !validSubject(e.Subject) {
		return Endpoint{}, fmt.Errorf("broker endpoint %q: subject %q: letters, digits, '-', '_' and '.' tokens, no wildcards", endpoint, e.Subject)
	}
	if err := e.options(endpoint, u.Query()); err != nil {
		return Endpoint{}, err
	}
	return e, nil
}

// options applies the endpoint's query options to e.
func (e *Endpoint) options(endpoint string, query url.Values) error {
	mapped := false
	for k, vs := range query {
		v := vs[len(vs)-1]
		switch {
		case k == "window":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 1<<30 {
				return fmt.Errorf("broker endpoint %q: window %q: want 1..%d", endpoint, v, 1<<30)
			}
			e.Window = n
		case k == "storage" && e.Driver == JetStream && (v == "file" || v == "memory"):
			e.Storage = v
		case k == "ack" && (e.Driver == JetStream || e.Driver == Redis) && (v == "none" || v == "explicit"):
			e.Ack = v
		case k == "acks" && e.Driver == Kafka && (v == "all" || v == "leader" || v == "none"):
			e.Acks = v
		case k == "idempotent" && e.Driver == Kafka && (v == "true" || v == "false"):
			e.Idempotent = v == "true"
		case k == "linger" && e.Driver == Kafka:
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 || d > time.Second {
				return fmt.Errorf("broker endpoint %q: linger %q: want a duration 0..1s", endpoint, v)
			}
			e.Linger = d
		case k == "group" && e.Driver != NATS:
			if !validGroup(v) {
				return fmt.Errorf("broker endpoint %q: group %q: 1 to 64 letters, digits, '-' and '_'", endpoint, v)
			}
			e.Group = v
		case k == "maxlen" && e.Driver == Redis:
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 1 {
				return fmt.Errorf("broker endpoint %q: maxlen %q: want a positive number of entries", endpoint, v)
			}
			e.MaxLen = n
		case k == "field" && e.Driver == Redis:
			if !jsonev.ValidName(v) {
				return fmt.Errorf("broker endpoint %q: field %q: 1 to 64 letters, digits, '_', '-' and '.'", endpoint, v)
			}
			e.Field = v
		case k == "format":
			if v != jsonev.FormatBucket && v != jsonev.FormatJSON {
				return fmt.Errorf("broker endpoint %q: format %q: want %s or %s", endpoint, v, jsonev.FormatBucket, jsonev.FormatJSON)
			}
			e.Format = v
		case slices.Contains(jsonev.Options, k):
			mapped = true
			if err := e.Fields.Set(k, v); err != nil {
				return fmt.Errorf("broker endpoint %q: %w", endpoint, err)
			}
		default:
			return fmt.Errorf("broker endpoint %q: option %s=%s is not one of %s's (window, format=bucket|json and with json its fields (docs/brokers.md); jetstream: storage=file|memory, ack=none|explicit, group=NAME; redis: maxlen=N, ack=none|explicit, group=NAME, field=NAME; kafka: acks=all|leader|none, idempotent=true|false, linger=D, group=NAME; core NATS keeps no group)", endpoint, k, v, e.Driver)
		}
	}
	if mapped && !e.JSON() {
		return fmt.Errorf("broker endpoint %q: field options (%s) need format=json", endpoint, strings.Join(jsonev.Options, ", "))
	}
	if err := e.Fields.Check(); err != nil {
		return fmt.Errorf("broker endpoint %q: %w", endpoint, err)
	}
	return nil
}

func validSubject(s string) bool {
	if s == "" || len(s) > 200 {
		return false
	}
	for _, tok := range strings.Split(s, ".") {
		if tok == "" {
			return false
		}
		for _, r := range tok {
			if !(r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
				return false
			}
		}
	}
	return true
}

func validGroup(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

// Topic names what the endpoint reads or writes, wherever its server is:
// driver:subject (jetstream:ysb.views). Jobs that write and read one
// topic are chained by it (dataflow.Job.Reads).
func (e Endpoint) Topic() string { return e.Driver + ":" + e.Subject }

// Where names the endpoint in errors: driver, server and subject.
func (e Endpoint) Where() string {
	return e.Driver + "://" + strings.TrimPrefix(e.Server, "nats://") + "/" + e.Subject
}

// LagTimeout bounds a lag query: the receiver samples the lag every 100 ms
// beside its end-of-run checks, which a slow broker must not hold up.
const LagTimeout = 500 * time.Millisecond

// ConnectTimeout bounds a connection attempt.
const ConnectTimeout = 5 * time.Second

// Problems checks the broker endpoints among endpoints (the others are
// ZeroMQ's): each must parse, and a broker is connected to, never bound.
func Problems(endpoints []string, bind bool) []string {
	var out []string
	for _, ep := range endpoints {
		if !IsBroker(ep) {
			continue
		}
		if _, err := Parse(ep); err != nil {
			out = append(out, err.Error())
		} else if bind {
			out = append(out, fmt.Sprintf("endpoint %s is a broker: the harness connects to it (no --bind)", ep))
		}
	}
	return out
}

// JobOutputGroup is the group the harness reads a job's output in when
// the URL names none.
const JobOutputGroup = "cp"

// InGroup is endpoint read in group g, unless it names a group already:
// the URL as given with "group=g" appended (the Helm chart writes it the
// same way, so that the manifests and the chart agree).
func InGroup(endpoint, g string) string {
	switch {
	case strings.Contains(endpoint, "?group=") || strings.Contains(endpoint, "&group="):
		return endpoint
	case strings.Contains(endpoint, "?"):
		return endpoint + "&group=" + g
	}
	return endpoint + "?group=" + g
}

// LaneEndpoints gives each of lanes lanes its own subject under the
// endpoint's: SUBJECT.0, SUBJECT.1, ... (one lane: the endpoint itself),
// as a ZeroMQ endpoint gives each lane its own port.
func LaneEndpoints(endpoint string, lanes int) ([]string, error) {
	if _, err := Parse(endpoint); err != nil {
		return nil, err
	}
	if lanes == 1 {
		return []string{endpoint}, nil
	}
	base, query, _ := strings.Cut(endpoint, "?")
	if query != "" {
		query = "?" + query
	}
	out := make([]string, lanes)
	for i := range out {
		out[i] = fmt.Sprintf("%s.%d%s", base, i, query)
	}
	return out, nil
}

// Failure is the broker failing (a connection closed, a publish refused,
// acknowledgements that never came): the system under test failed, so
// the trial says nothing about a rate.
type Failure struct {
	Endpoint string
	Err      error
}

func (f *Failure) Error() string { return fmt.Sprintf("broker %s: %v", f.Endpoint, f.Err) }
func (f *Failure) Unwrap() error { return f.Err }

// IsFailure says whether err is the broker's failure.
func IsFailure(err error) bool {
	var f *Failure
	return errors.As(err, &f)
}
