package profiler

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
)

// v1Block frames recs as a version 1 block (no run lengths), as written
// before runs existed, for the compatibility tests.
func v1Block(recs []Record) []byte {
	var payload []byte
	var prevT, prevID uint64
	for _, r := range recs {
		payload = binary.AppendUvarint(payload, r.TSC-prevT)
		payload = binary.AppendVarint(payload, int64(r.ID-prevID))
		prevT, prevID = r.TSC, r.ID
	}
	h := make([]byte, blockHeader)
	copy(h, blockMagic[:])
	h[4], h[5] = 1, CodecNone
	binary.LittleEndian.PutUint32(h[8:], uint32(len(recs)))
	binary.LittleEndian.PutUint32(h[12:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(h[16:], crc32.Checksum(payload, crcTable))
	binary.LittleEndian.PutUint32(h[20:], crc32.Checksum(h[:20], crcTable))
	return append(h, payload...)
}

func readBytes(t *testing.T, b []byte) ([]Record, []Corruption) {
	t.Helper()
	var out []Record
	bad, err := ReadBlocks(bytes.NewReader(b), func(r []Record) error { out = append(out, r...); return nil })
	if err != nil {
		t.Fatal(err)
	}
	return out, bad
}

// Version 1 logs (written before runs) still read; version 2 runs expand
// to the records they stand for, and both can follow each other in a file.
func TestBlockVersionsAndRuns(t *testing.T) {
	enc, _ := newBlockEncoder(CodecZstd)
	v1 := v1Block([]Record{{5, 100}, {9, 98}})
	v2 := enc.encode(nil, []run{{TSC: 20, ID: 7, N: 3}, {TSC: 21, ID: 3, N: 1}, {TSC: 21, ID: 4, N: 2}}, 6)
	got, bad := readBytes(t, append(v1, v2...))
	want := []Record{{5, 100}, {9, 98}, {20, 7}, {20, 8}, {20, 9}, {21, 3}, {21, 4}, {21, 5}}
	if len(bad) > 0 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("read %v (damage %v), want %v", got, bad, want)
	}
}

// A run may not claim more records than its block announces: a few bytes
// must not expand into gigabytes. The damaged block is reported and the
// next one read.
func TestRunBeyondTheBlockCountIsDamage(t *testing.T) {
	enc, _ := newBlockEncoder(CodecNone)
	liar := enc.encode(nil, []run{{TSC: 1, ID: 1, N: 1 << 40}}, 10)
	good := enc.encode(nil, []run{{TSC: 2, ID: 5, N: 2}}, 2)
	got, bad := readBytes(t, append(liar, good...))
	if len(bad) != 1 || !strings.Contains(bad[0].Reason, "run of") {
		t.Fatalf("damage %v, want one run-length complaint", bad)
	}
	if fmt.Sprint(got) != fmt.Sprint([]Record{{2, 5}, {2, 6}}) {
		t.Fatalf("read %v after the damaged block", got)
	}
	short := enc.encode(nil, []run{{TSC: 1, ID: 1, N: 3}}, 4) // announces 4, holds 3
	if got, bad := readBytes(t, short); len(got) != 0 || len(bad) != 1 {
		t.Fatalf("a block holding fewer records than announced: read %v, damage %v", got, bad)
	}
}

// The buffered handler keeps a bucket logged at one instant as one run,
// whether it came as a range or as one call per tuple, and splits runs
// only where a block fills; the file holds every record in order.
func TestBufferedKeepsRuns(t *testing.T) {
	for _, format := range []string{FormatBinary, FormatASCII} {
		dir := t.TempDir()
		p := New(time.Hour)
		path := filepath.Join(dir, "r.log")
		ch, err := p.Open("r", Config{Handler: HandlerBuffered, BlockSize: 64, Path: path, Format: format})
		if err != nil {
			t.Fatal(err)
		}
		b := ch.load().h.(*buffered)
		var want []Record
		id := uint64(1000)
		for bucket := uint64(0); bucket < 10; bucket++ {
			at := 500 + bucket*10
			if bucket%2 == 0 {
				ch.LogRangeAt(at, id, 100)
			} else {
				for i := uint64(0); i < 100; i++ {
					ch.LogTSAt(at, id+i)
				}
			}
			for i := uint64(0); i < 100; i++ {
				want = append(want, Record{TSC: at, ID: id + i})
			}
			id += 100
		}
		ch.LogTSAt(600, 7) // not the next id: a run of its own
		want = append(want, Record{TSC: 600, ID: 7})
		if b.n > 3 || b.records != 1001%64 {
			t.Fatalf("%s: %d entries for %d records in the open block; runs were not kept", format, b.n, b.records)
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		var got []Record
		if format == FormatBinary {
			got = readAll(t, path)
		} else {
			got = readASCII(t, path)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s: read %d records, want %d; first %v", format, len(got), len(want), got[:min(3, len(got))])
		}
	}
}

func readASCII(t *testing.T, path string) []Record {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []Record
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r Record
		if _, err := fmt.Sscanf(line, "%d,%d", &r.TSC, &r.ID); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		out = append(out, r)
	}
	return out
}

// A block that straddles the end of the reader's buffer makes it peek
// again, which moves the buffered bytes: anything read from the header
// after that must have been copied first. (The version byte was not, and
// about one straddling block in a hundred decoded as the wrong version.)
// Payloads of runs 1 apart are the bytes 1, 2, 0, so the bytes that slide
// under the stale header are almost surely the wrong version, at every
// alignment tried.
func TestBlocksAcrossTheReadBufferEdge(t *testing.T) {
	enc, _ := newBlockEncoder(CodecNone)
	runs := func(first uint64, n int) []run {
		rs := make([]run, n)
		for i := range rs {
			rs[i] = run{TSC: first + uint64(i), ID: first + uint64(i), N: 1}
		}
		return rs
	}
	for lead := 1; lead <= 1500; lead += 97 {
		var file []byte
		var want uint64
		file = enc.encode(file, runs(0, lead), lead)
		want = uint64(lead)
		for len(file) < 3<<20 {
			file = enc.encode(file, runs(want, 1000), 1000)
			want += 1000
		}
		got, bad := readBytes(t, file)
		if len(bad) > 0 || uint64(len(got)) != want {
			t.Fatalf("lead block of %d records: read %d of %d records, damage %v", lead, len(got), want, bad)
		}
		for i, r := range got {
			if r.ID != uint64(i) || r.TSC != uint64(i) {
				t.Fatalf("lead block of %d records: record %d is %+v", lead, i, r)
			}
		}
	}
}

// A block larger than ReadChunk is handed out in pieces of at most
// ReadChunk records, runs split between pieces, nothing lost; a damaged
// block is skipped whole, never in part.
func TestLargeBlocksComeInPieces(t *testing.T) {
	enc, _ := newBlockEncoder(CodecZstd)
	const n = 3*ReadChunk + 123
	big := enc.encode(nil, []run{{TSC: 7, ID: 0, N: ReadChunk + 5}, {TSC: 9, ID: ReadChunk + 5, N: n - ReadChunk - 5}}, n)
	damaged := enc.encode(nil, []run{{TSC: 1, ID: 1, N: 2 * ReadChunk}}, 2*ReadChunk+1) // announces one more than it holds
	br := NewBlockReader(bytes.NewReader(append(append([]byte(nil), damaged...), big...)))
	var got []Record
	pieces := 0
	for {
		recs, err := br.Next(nil)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) > ReadChunk {
			t.Fatalf("a piece of %d records", len(recs))
		}
		pieces++
		got = append(got, recs...)
	}
	if len(got) != n || pieces != 4 || len(br.Corruptions) != 1 || br.Blocks != 1 {
		t.Fatalf("%d records in %d pieces of %d blocks, damage %v; want %d in 4 of 1, the damaged block skipped whole", len(got), pieces, br.Blocks, br.Corruptions, n)
	}
	for i, r := range got {
		wantT := uint64(7)
		if i >= ReadChunk+5 {
			wantT = 9
		}
		if r.ID != uint64(i) || r.TSC != wantT {
			t.Fatalf("record %d is %+v", i, r)
		}
	}
}

// zstdBlock frames an arbitrary zstd payload as a version 2 block that
// announces records records.
func zstdBlock(t *testing.T, raw []byte, records int, declareSize bool) []byte {
	t.Helper()
	var payload []byte
	if declareSize {
		enc, err := newBlockEncoder(CodecZstd)
		if err != nil {
			t.Fatal(err)
		}
		payload = enc.zenc.EncodeAll(raw, nil)
	} else { // a stream frame: no content size in its header
		var buf bytes.Buffer
		w, err := zstd.NewWriter(&buf, zstd.WithEncoderConcurrency(1))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(raw); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		payload = buf.Bytes()
	}
	return appendBlock(nil, CodecZstd, payload, records)
}

// TestZstdBombsAreDamage: a small compressed block that inflates far past
// what its records can take is skipped as damage without the reader ever
// allocating the inflated size, whether its frame declares that size or
// not; the block after it is read.
func TestZstdBombsAreDamage(t *testing.T) {
	bomb := make([]byte, 256<<20) // 256 MiB of zeros: a few KiB compressed
	enc, _ := newBlockEncoder(CodecNone)
	good := enc.encode(nil, []run{{TSC: 2, ID: 5, N: 2}}, 2)
	for _, declared := range []bool{true, false} {
		file := append(zstdBlock(t, bomb, 1000, declared), good...)
		if len(file) > 64<<10 {
			t.Fatalf("the bomb is %d bytes compressed", len(file))
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		got, bad := readBytes(t, file)
		runtime.ReadMemStats(&after)
		if len(bad) != 1 || !strings.Contains(bad[0].Reason, "zstd") || fmt.Sprint(got) != fmt.Sprint([]Record{{2, 5}, {2, 6}}) {
			t.Fatalf("declared size %v: read %v, damage %v", declared, got, bad)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
			t.Fatalf("declared size %v: reading a %d-byte bomb allocated %d MiB", declared, len(file), alloc>>20)
		}
	}
}
