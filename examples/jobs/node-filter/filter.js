#!/usr/bin/env node
// A filter in Node.js on NATS JetStream, written as any Node programmer
// writes one: it reads YSB's ad events, one JSON event a message, in a
// durable consumer, keeps the views and publishes them, unchanged, to
// another subject. It knows nothing of the harness: cp_id and
// cp_intended_ns are two fields of each event, carried through.
"use strict";

const { connect, AckPolicy, DeliverPolicy } = require("nats");

function parseArgs(argv) {
  const args = { server: "127.0.0.1:4222", input: "events", group: "filter", output: "views" };
  for (let i = 2; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, "");
    if (!(key in args) || i + 1 >= argv.length) {
      throw new Error(`usage: filter.js [--server HOST:PORT] [--input SUBJECT] [--group NAME] [--output SUBJECT] (not ${argv[i]})`);
    }
    args[key] = argv[i + 1];
  }
  return args;
}

// streamFor is the stream that holds subject, made where there is none.
async function streamFor(jsm, subject) {
  try {
    return await jsm.streams.find(subject);
  } catch (err) {
    const name = "EVENTS_" + subject.replace(/[.-]/g, "_");
    await jsm.streams.add({ name, subjects: [subject] });
    return name;
  }
}

async function main() {
  const args = parseArgs(process.argv);
  const nc = await connect({ servers: args.server });
  const jsm = await nc.jetstreamManager();
  const js = nc.jetstream();
  const stream = await streamFor(jsm, args.input);
  await streamFor(jsm, args.output);
  try {
    await jsm.consumers.info(stream, args.group);
  } catch (err) {
    await jsm.consumers.add(stream, {
      durable_name: args.group, ack_policy: AckPolicy.None, deliver_policy: DeliverPolicy.All, filter_subject: args.input,
    });
  }
  const consumer = await js.consumers.get(stream, args.group);
  for (const sig of ["SIGINT", "SIGTERM"]) {
    process.on(sig, () => nc.drain().finally(() => process.exit(0)));
  }
  console.error(`filter.js: reading ${args.input} in group ${args.group}, writing the views to ${args.output}`);
  const messages = await consumer.consume({ max_messages: 1024 });
  let pending = [];
  for await (const m of messages) {
    const event = m.json();
    if (event.event_type === "view") {
      pending.push(js.publish(args.output, JSON.stringify(event)));
    }
    // wait for the broker's acknowledgements now and then, and whenever
    // the input has nothing more right now
    if (pending.length >= 256 || messages.getPending() === 0) {
      await Promise.all(pending);
      pending = [];
    }
  }
}

main().catch((err) => {
  console.error(`filter.js: ${err.message}`);
  process.exit(1);
});
