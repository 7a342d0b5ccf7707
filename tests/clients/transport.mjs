// useChat's transport, driven without React: DefaultChatTransport sends a message to
// /api/ads/<id>/ui-chat and readUIMessageStream assembles the assistant's UIMessage, as
// useChat does. Then a stream dropped mid-run and resumed gives the same message.
import assert from "node:assert/strict";
import { DefaultChatTransport, readUIMessageStream } from "ai";

const { BASE, TOKEN, AD_ID, CHAT_ID } = process.env;
const headers = { Authorization: `Token ${TOKEN}` };
const transport = new DefaultChatTransport({ api: `${BASE}/api/ads/${AD_ID}/ui-chat`, headers });

function userMessage(id, text) {
  return { id, role: "user", parts: [{ type: "text", text }] };
}

async function lastMessage(stream) {
  let message;
  for await (const snapshot of readUIMessageStream({ stream })) message = snapshot;
  return message;
}

async function history() {
  const response = await fetch(`${BASE}/api/ads/${AD_ID}/conversation?format=ui`, { headers });
  assert.equal(response.status, 200);
  return (await response.json()).results;
}

function toolPart(message, name) {
  return message.parts.find((part) => part.type === `tool-${name}`);
}

// 1. A message, answered with the music draft v2 as a tool call and a data part.
const stream = await transport.sendMessages({
  chatId: CHAT_ID,
  messages: [userMessage("u-1", "make the music more upbeat")],
  trigger: "submit-message",
  messageId: undefined,
  abortSignal: undefined,
});
const answer = await lastMessage(stream);
assert.equal(answer.role, "assistant");
assert.match(answer.id, /^run-/);
const music = toolPart(answer, "create_music_draft");
assert.equal(music.state, "output-available");
assert.equal(music.input.prompt, "upbeat pop, 120 bpm");
assert.equal(music.output.versionId, "v2");
const draft = answer.parts.find((part) => part.type === "data-draft");
assert.equal(draft.data.kind, "music");
assert.equal(draft.data.version, "v2");
assert.match(draft.data.id, /^[0-9a-f-]{36}$/);
assert.ok(answer.parts.some((part) => part.type === "text" && part.text.includes("Music v2")));

// 2. The next message's stream dropped mid-run, then resumed as useChat({resume}) does.
const controller = new AbortController();
const dropped = await transport.sendMessages({
  chatId: CHAT_ID,
  messages: [userMessage("u-2", "make it even more upbeat")],
  trigger: "submit-message",
  messageId: undefined,
  abortSignal: controller.signal,
});
let seen;
try {
  for await (const snapshot of readUIMessageStream({ stream: dropped })) {
    seen = snapshot;
    if (toolPart(snapshot, "create_music_draft")) controller.abort();
  }
} catch (error) {
  assert.equal(error.name, "AbortError");
}
assert.ok(seen && !seen.parts.some((part) => part.type === "text"), "dropped before the reply");
const resumed = await transport.reconnectToStream({ chatId: CHAT_ID });
assert.ok(resumed, "the run is still in progress: the resume must stream it");
const replayed = await lastMessage(resumed);
assert.equal(replayed.id, seen.id);
const stored = (await history()).at(-1);
assert.equal(stored.id, replayed.id);
const shape = (message) =>
  message.parts.map((part) => [part.type, part.state ?? null, part.output?.versionId ?? part.data?.version ?? part.text ?? null]);
assert.deepEqual(shape(replayed), shape(stored));
assert.equal(toolPart(replayed, "create_music_draft").output.versionId, "v3");

// 3. Nothing in progress: the resume answers 204 and the transport returns null.
assert.equal(await transport.reconnectToStream({ chatId: CHAT_ID }), null);
console.log(JSON.stringify({ first: answer.id, resumed: replayed.id, parts: shape(replayed) }));
