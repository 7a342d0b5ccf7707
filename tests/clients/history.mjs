// The history equals what a useChat page holds: one chat of every kind of run (the
// first message with its brief, tools and drafts, a reply reset by its provider, a failed
// run, a stopped one, a regenerated reply), each stream put together by the `ai`
// package's own reader, keeping the messages as useChat keeps them; then
// ?format=ui must be those messages, exactly.
import assert from "node:assert/strict";
import { DefaultChatTransport, readUIMessageStream } from "ai";

const { BASE, TOKEN, AD_ID } = process.env;
const headers = { Authorization: `Token ${TOKEN}` };
const transport = new DefaultChatTransport({ api: `${BASE}/api/ads/${AD_ID}/ui-chat`, headers });
const CHAT_ID = "chat-history";
let messages = []; // what useChat's `messages` holds

const asJSON = (value) => JSON.parse(JSON.stringify(value)); // undefined fields dropped

async function send(text, { trigger = "submit-message", onSnapshot } = {}) {
  if (trigger === "submit-message") {
    messages.push({ id: `client-${messages.length}`, role: "user", parts: [{ type: "text", text }] });
  } else {
    messages = messages.slice(0, -1); // regenerate drops the last reply, as useChat does
  }
  const stream = await transport.sendMessages({
    chatId: CHAT_ID,
    messages,
    trigger,
    messageId: undefined,
    abortSignal: undefined,
  });
  const errors = [];
  let reply;
  for await (const snapshot of readUIMessageStream({ stream, onError: (e) => errors.push(e.message) })) {
    reply = snapshot;
    if (onSnapshot) await onSnapshot(snapshot);
  }
  messages.push(reply);
  return { reply, errors };
}

async function cancel(runId) {
  const response = await fetch(`${BASE}/api/runs/${runId}/cancel`, { method: "POST", headers });
  assert.equal(response.status, 202);
}

const kinds = {};
kinds.tools = await send("tools: a music bed");
kinds.reset = await send("reset: say it twice");
kinds.failed = await send("fail: this one breaks");
let cancelled = false;
kinds.cancelled = await send("slow: take your time", {
  onSnapshot: async (snapshot) => {
    if (!cancelled && snapshot.parts.some((part) => part.type === "text" && part.text)) {
      cancelled = true;
      await cancel(snapshot.metadata.runId);
    }
  },
});
kinds.normal = await send("plain: one line");
const replaced = kinds.normal.reply.id;
kinds.regenerated = await send("", { trigger: "regenerate-message" });

// What each kind looked like live.
assert.equal(kinds.tools.reply.parts[0].type, "data-brief");
assert.ok(kinds.tools.reply.parts.some((p) => p.type === "data-draft"));
const abandoned = kinds.reset.reply.parts.filter((p) => p.providerMetadata?.adstudio?.abandoned);
assert.equal(abandoned.length, 1, JSON.stringify(kinds.reset.reply.parts));
assert.equal(kinds.failed.reply.metadata.status, "failed");
assert.deepEqual(kinds.failed.errors, [kinds.failed.reply.metadata.error]);
assert.equal(kinds.cancelled.reply.metadata.status, "cancelled");
assert.notEqual(kinds.regenerated.reply.id, replaced);

const response = await fetch(`${BASE}/api/ads/${AD_ID}/conversation?format=ui`, {
  headers,
});
assert.equal(response.status, 200);
const stored = (await response.json()).results;
assert.deepEqual(stored, asJSON(messages));
console.log(
  JSON.stringify({
    messages: stored.length,
    ids: stored.map((m) => m.id),
    statuses: stored.filter((m) => m.role === "assistant").map((m) => m.metadata.status),
    replaced,
  }),
);
