// A real EventSource follows a run's events to the end through the reconnections the
// server causes (?wait=1 ends each stream after a second): each reconnection sends
// Last-Event-ID, which takes precedence over the URL's ?after=, so the sequence numbers
// come whole, each once, across two EventSources (the second starting at ?after=).
import assert from "node:assert/strict";
import { EventSource } from "eventsource";

const { BASE, TOKEN, RUN_ID } = process.env;
const TYPES = ["run.started", "model_call.started", "text", "tool_call.started",
  "tool_call.finished", "draft.created", "run.finished"];

function follow({ after = 0, stopAfter } = {}) {
  return new Promise((resolve, reject) => {
    const seqs = [];
    const sent = []; // the Last-Event-ID of each request
    let opens = 0;
    const source = new EventSource(
      `${BASE}/api/runs/${RUN_ID}/events/stream?wait=1&after=${after}`,
      {
        fetch: (url, init) => {
          sent.push(init.headers["Last-Event-ID"] ?? null);
          return fetch(url, { ...init, headers: { ...init.headers, Authorization: `Token ${TOKEN}` } });
        },
      },
    );
    const timer = setTimeout(() => { source.close(); reject(new Error(`timed out after ${seqs}`)); }, 60000);
    const done = () => { clearTimeout(timer); source.close(); resolve({ seqs, opens, sent }); };
    source.onopen = () => { opens += 1; };
    for (const type of TYPES) {
      source.addEventListener(type, (event) => {
        if (source.readyState === EventSource.CLOSED) return; // the rest of a parsed chunk
        seqs.push(Number(event.lastEventId));
        assert.equal(JSON.parse(event.data).type, type);
        if (seqs.length === stopAfter) done();
      });
    }
    source.onerror = () => {
      // After run.finished the server answers 204: the EventSource closes for good.
      if (source.readyState === EventSource.CLOSED) done();
    };
  });
}

const first = await follow({ stopAfter: 3 });
const rest = await follow({ after: first.seqs.at(-1) });
const all = [...first.seqs, ...rest.seqs];
assert.deepEqual(all, Array.from({ length: all.length }, (_, i) => i + 1));
assert.ok(rest.opens >= 2, "the server's ?wait=1 made the EventSource reconnect");
assert.ok(rest.sent.some((id) => id !== null), "a reconnection sent Last-Event-ID");
console.log(JSON.stringify({ first: first.seqs, rest: rest.seqs, reconnections: rest.opens }));
