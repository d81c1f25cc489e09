package sender_test

import (
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/scenarios"
	"github.com/cloudprofiler-go/cp/sender"
)

// TestWindowsOwedAreWhatWasSent: with a window declared, what the sender
// says each campaign's window owes is exactly what the bytes it sent hold:
// the tuples the filter keeps, by the event time written in each tuple and
// the campaign of its ad, counted here from the messages that arrived.
// Batches of several buckets per call are counted item by item.
func TestWindowsOwedAreWhatWasSent(t *testing.T) {
	sc, err := scenarios.Load("ad-event")
	if err != nil {
		t.Fatal(err)
	}
	ads, err := sc.Ads()
	if err != nil {
		t.Fatal(err)
	}
	campaign := map[[16]byte]string{}
	for i, ad := range ads {
		campaign[ad] = scenarios.CampaignID(i / sc.AdsPerCampaign)
	}
	for _, batch := range []int{1, 16} {
		cfg := config(t, 200_000, 0, batch)
		cfg.Scenario, cfg.BucketSize, cfg.Duration = sc, 10, 300*time.Millisecond
		cfg.ExpectWindow = 50 * time.Millisecond
		if cfg.Expect, err = scenarios.ParsePredicate(sc.Schema, "event_type == view"); err != nil {
			t.Fatal(err)
		}
		got, res := sendInto(t, cfg, 0)
		want := map[scenarios.WindowKey]uint64{}
		var views uint64
		for _, msg := range got.msgs {
			err := scenarios.EachTuple(msg, scenarios.DecodeAdEvent, func(tp *scenarios.Tuple) {
				if string(tp.Ad.EventType) != "view" {
					return
				}
				var ad [16]byte
				copy(ad[:], tp.Ad.AdID)
				want[scenarios.WindowKey{Key: campaign[ad], EndMs: (tp.Ad.EventTimeMs/50 + 1) * 50}]++
				views++
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		owed := map[scenarios.WindowKey]uint64{}
		for _, w := range res.ExpectedWindows {
			owed[w.WindowKey] += w.Count
		}
		if !maps.Equal(owed, want) || len(want) < 100 || res.ExpectWindowMs != 50 || res.Matched != views {
			t.Errorf("batch %d: the sender owes %d windows (%d views matched), the bytes sent hold %d (%d views); window %d ms", batch, len(owed), res.Matched, len(want), views, res.ExpectWindowMs)
		}
		if len(res.Errors) > 0 {
			t.Errorf("batch %d: errors %v", batch, res.Errors)
		}
	}
}

// TestAWindowIsRefusedWhereItCannotBeCounted: a window needs ad events (a
// campaign per tuple), a duration (its cells are made before the run) and
// whole milliseconds.
func TestAWindowIsRefusedWhereItCannotBeCounted(t *testing.T) {
	ad, err := scenarios.Load("ad-event")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		set      func(*sender.Config)
		complain string
	}{
		{"synthetic tuples", func(c *sender.Config) {}, "needs the ad-event scenario's ads"},
		{"no duration", func(c *sender.Config) { c.Scenario, c.Duration = ad, 0 }, "needs a --duration"},
		{"part of a millisecond", func(c *sender.Config) { c.Scenario, c.ExpectWindow = ad, 1500*time.Microsecond }, "whole milliseconds"},
		{"over an hour", func(c *sender.Config) { c.Scenario, c.ExpectWindow = ad, 2*time.Hour }, "whole milliseconds from 1ms to 1h0m0s"},
	} {
		cfg := config(t, 1000, 0, 1)
		cfg.Endpoints, cfg.Duration, cfg.ExpectWindow = []string{"tcp://127.0.0.1:1"}, time.Second, time.Second
		tc.set(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), tc.complain) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.complain)
		}
	}
}
