package wirecorpus

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"sort"

	"github.com/cloudprofiler-go/cp/receiver/tally"
)

// File is where the corpus lives, relative to the module root.
const File = "testdata/wire/cases.json"

// Case is one conformance case: messages sent in order on one connection,
// and what a receiver must make of them.
type Case struct {
	Name   string `json:"name"`
	Rule   string `json:"rule"`   // the rule of docs/wire.md it checks
	Schema string `json:"schema"` // the receiver's schema
	// Messages are hex-encoded; a message with several parts is a
	// multipart ZeroMQ message.
	Messages [][]string `json:"messages"`
	Expect   Expect     `json:"expect"`
}

// Expect is a receiver's required state after a case.
type Expect struct {
	// Malformed counts messages refused, by reason; every reason not
	// listed must be 0.
	Malformed map[string]uint64 `json:"malformed"`
	// Streams by id (decimal); a stream not listed must not exist.
	Streams map[string]Stream `json:"streams"`
}

// Stream is one stream's required accounting.
type Stream struct {
	ReceivedTuples uint64 `json:"received_tuples"`
	Buckets        uint64 `json:"buckets"`
	Duplicates     uint64 `json:"duplicate_buckets"`
	Stale          uint64 `json:"stale_buckets"`
	Gaps           uint64 `json:"gap_buckets"`
	Ended          bool   `json:"ended"`
	Complete       bool   `json:"complete"`
}

// Corpus is the file's content.
type Corpus struct {
	Format  string `json:"format"`
	Version int    `json:"wire_version"`
	Cases   []Case `json:"cases"`
}

// Load reads the corpus file.
func Load(path string) (*Corpus, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("conformance corpus: %w", err)
	}
	var c Corpus
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("conformance corpus %s: %w", path, err)
	}
	return &c, nil
}

// Parts decodes a case's messages.
func (c Case) Parts() ([][][]byte, error) {
	out := make([][][]byte, len(c.Messages))
	for i, m := range c.Messages {
		for _, h := range m {
			b, err := hex.DecodeString(h)
			if err != nil {
				return nil, fmt.Errorf("case %q message %d: %w", c.Name, i, err)
			}
			out[i] = append(out[i], b)
		}
	}
	return out, nil
}

// Got is what a receiver reported, in the corpus's terms.
type Got struct {
	Malformed map[string]uint64
	Streams   map[uint32]Stream
}

// GotFrom is dgrecv's result in the corpus's terms.
func GotFrom(res *tally.Result) Got {
	got := Got{Malformed: map[string]uint64{}, Streams: map[uint32]Stream{}}
	for reason, n := range res.MalformedBy {
		if n > 0 {
			got.Malformed[reason] = n
		}
	}
	for _, s := range res.Streams {
		got.Streams[s.Stream] = Stream{ReceivedTuples: s.ReceivedTuples, Buckets: s.Buckets, Duplicates: s.Duplicates,
			Stale: s.Stale, Gaps: s.GapBuckets, Ended: s.Ended, Complete: s.Complete}
	}
	return got
}

// Check compares a receiver's outcome with the case's expectation and
// lists every difference.
func (c Case) Check(got Got) []string {
	var diffs []string
	reasons := map[string]bool{}
	for r := range got.Malformed {
		reasons[r] = true
	}
	for r := range c.Expect.Malformed {
		reasons[r] = true
	}
	for _, r := range sortedKeys(reasons) {
		if got.Malformed[r] != c.Expect.Malformed[r] {
			diffs = append(diffs, fmt.Sprintf("malformed %s: %d, want %d", r, got.Malformed[r], c.Expect.Malformed[r]))
		}
	}
	seen := map[string]bool{}
	for id, s := range got.Streams {
		key := fmt.Sprint(id)
		seen[key] = true
		want, ok := c.Expect.Streams[key]
		if !ok {
			diffs = append(diffs, fmt.Sprintf("stream %s exists: %+v", key, s))
			continue
		}
		if s != want {
			diffs = append(diffs, fmt.Sprintf("stream %s: %+v, want %+v", key, s, want))
		}
	}
	for key := range c.Expect.Streams {
		if !seen[key] {
			diffs = append(diffs, fmt.Sprintf("stream %s is missing", key))
		}
	}
	return diffs
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
