// A real conversation (generate, then chats, a failed tool call among them) as the AI
// SDK's validators see it: every UIMessage and every ModelMessage must be accepted.
import assert from "node:assert/strict";
import { convertToModelMessages, modelMessageSchema, validateUIMessages } from "ai";

const { BASE, TOKEN, AD_ID } = process.env;
const headers = { Authorization: `Token ${TOKEN}` };

async function all(format) {
  const items = [];
  let url = `${BASE}/api/ads/${AD_ID}/conversation?format=${format}`;
  while (url) {
    const response = await fetch(url, { headers });
    assert.equal(response.status, 200, await response.clone().text());
    const page = await response.json();
    items.push(...page.results);
    url = page.next;
  }
  return items;
}

const ui = await all("ui");
const validated = await validateUIMessages({ messages: ui });
assert.equal(validated.length, ui.length);
const states = ui.flatMap((m) => m.parts.filter((p) => p.type.startsWith("tool-")).map((p) => p.state));
assert.ok(states.includes("output-error"), "the failed tool call is among them");
await convertToModelMessages(validated);

const model = await all("model");
for (const message of model) modelMessageSchema.parse(message);
console.log(JSON.stringify({ ui: ui.length, model: model.length, states }));
