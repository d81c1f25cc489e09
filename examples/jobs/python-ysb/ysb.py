#!/usr/bin/env python3
"""YSB, the Yahoo Streaming Benchmark, in Python on Redis Streams.

It reads ad events, one JSON event a message as YSB's generator writes
them, from a Redis stream in a consumer group; keeps the views; projects
each to its ad and time; joins the ad with its campaign in the Redis hash
ysb:campaigns (YSB's join table, cached as YSB's jobs cache it); counts
the views per campaign in tumbling windows of event time; and, once a
window is over and its lateness has passed, writes its count to another
stream, one JSON object a window. A view that comes after its window was
written is late and not counted, as in YSB.

Each event's cp_id and cp_intended_ns are two more fields, which the job
keeps for a window's latest event, so that a window's latency can be
measured from when that event was meant to be sent.

Needs Python 3 and redis-py (Debian: python3-redis).
"""

import argparse
import json
import os
import signal
import sys
import time

import redis

CAMPAIGNS = "ysb:campaigns"


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--redis", default="127.0.0.1:6379", help="HOST:PORT of the Redis with the streams and the campaigns")
    ap.add_argument("--input", default="ysb.in", help="the stream of ad events")
    ap.add_argument("--group", default="ysb", help="the job's consumer group on the input")
    ap.add_argument("--output", default="ysb.out", help="the stream the windows' counts are written to")
    ap.add_argument("--window", type=float, default=10.0, help="the windows' size in seconds (YSB's: 10)")
    ap.add_argument("--lateness", type=float, default=0.5, help="how long after its end a window waits for late views, in seconds")
    return ap.parse_args()


class Windows:
    """The open windows' counts, per campaign and window end (Unix ms)."""

    def __init__(self, size_ms, lateness_ms):
        self.size_ms, self.lateness_ms = size_ms, lateness_ms
        self.open = {}
        self.closed_before = 0  # windows ending at or before this were written
        self.late = 0

    def count(self, campaign, event):
        t = int(event["event_time"])
        end = (t // self.size_ms + 1) * self.size_ms
        if end <= self.closed_before:
            self.late += 1
            return
        w = self.open.get((campaign, end))
        if w is None:
            w = self.open[(campaign, end)] = {"count": 0, "latest": -1}
        w["count"] += 1
        if t >= w["latest"]:
            w["latest"], w["cp_id"], w["cp_intended_ns"] = t, event["cp_id"], event["cp_intended_ns"]

    def due(self, now_ms):
        """Removes and returns the windows whose lateness has passed."""
        horizon = now_ms - self.lateness_ms
        out = [(k, w) for k, w in self.open.items() if k[1] <= horizon]
        for k, _ in out:
            del self.open[k]
        self.closed_before = max(self.closed_before, horizon)
        return out


def main():
    args = parse_args()
    host, port = args.redis.rsplit(":", 1)
    r = redis.Redis(host=host, port=int(port))
    try:
        r.xgroup_create(args.input, args.group, id="0", mkstream=True)
    except redis.ResponseError as e:
        if "BUSYGROUP" not in str(e):
            raise
    consumer = f"{args.group}-{os.getpid()}"
    windows = Windows(int(args.window * 1000), int(args.lateness * 1000))
    campaigns = {}
    stopping = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stopping.append(True))
    print(f"ysb.py: reading {args.input} in group {args.group}, windows of {args.window}s to {args.output}", file=sys.stderr, flush=True)
    while not stopping:
        got = r.xreadgroup(args.group, consumer, {args.input: ">"}, count=512, block=100)
        ids, views = [], []
        for _, entries in got or []:
            for entry_id, fields in entries:
                ids.append(entry_id)
                event = json.loads(fields[b"d"])
                if event["event_type"] == "view":
                    views.append(event)
        unknown = list({v["ad_id"] for v in views if v["ad_id"] not in campaigns})
        if unknown:
            for ad, campaign in zip(unknown, r.hmget(CAMPAIGNS, unknown)):
                if campaign is not None:
                    campaigns[ad] = campaign.decode()
        for v in views:
            campaign = campaigns.get(v["ad_id"])
            if campaign is not None:
                windows.count(campaign, v)
        if ids:
            r.xack(args.input, args.group, *ids)
        due = windows.due(time.time() * 1000)
        if due:
            pipe = r.pipeline(transaction=False)
            for (campaign, end), w in due:
                pipe.xadd(args.output, {"d": json.dumps({"campaign_id": campaign, "window_end": end, "count": w["count"],
                                                          "cp_id": w["cp_id"], "cp_intended_ns": w["cp_intended_ns"]})})
            pipe.execute()


if __name__ == "__main__":
    main()
