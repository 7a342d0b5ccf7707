// A useChat page's data layer, typed by clients/adstudio-chat.ts and the client generated
// from /api/schema/, with no cast: the history is the SDK's UIMessage[] as the schema
// types it, and AdStudioUIMessage[] once the SDK's validateUIMessages has checked it; a
// message sent through useChat's transport comes back typed; tool and data parts narrow
// by type and state. `tsc` fails on a schema or a module that lies.
import { DefaultChatTransport, readUIMessageStream, validateUIMessages, type UIMessage } from "ai";
import { isDeepStrictEqual } from "node:util";
import createClient from "openapi-fetch";
import type { AdStudioUIMessage } from "../../clients/adstudio-chat.js";
import type { paths } from "./chat-schema.js";

const { BASE, TOKEN, AD_ID } = process.env;
if (!BASE || !TOKEN || !AD_ID) throw new Error("BASE, TOKEN and AD_ID are required");
const headers = { Authorization: `Token ${TOKEN}` };
const api = createClient<paths>({ baseUrl: BASE, headers });

function check(condition: boolean, what: string): asserts condition {
  if (!condition) throw new Error(`failed: ${what}`);
}

async function history(): Promise<AdStudioUIMessage[]> {
  const { data, error } = await api.GET("/api/ads/{ad_id}/conversation/ui", {
    params: { path: { ad_id: AD_ID! } },
  });
  if (!data) throw new Error(JSON.stringify(error));
  const messages: UIMessage[] = data.results; // the operation's type is the SDK's
  return validateUIMessages<AdStudioUIMessage>({ messages });
}

/** What a page shows of a reply: each part, narrowed by its type and state. */
function describe(message: AdStudioUIMessage): string[] {
  return message.parts.map((part) => {
    switch (part.type) {
      case "text":
        return part.providerMetadata?.adstudio?.abandoned ? "abandoned text" : `text: ${part.text}`;
      case "data-brief":
        return `brief: ${part.data.client}, ${part.data.durationSeconds} s`;
      case "data-draft":
        return `draft: ${part.data.kind} ${part.data.version}`;
      case "tool-create_music_draft":
        if (part.state === "output-available") return `music ${part.output.versionId}: ${part.input.prompt}`;
        if (part.state === "output-error") return `music failed: ${part.errorText}`;
        return "music…";
      case "tool-create_voice_draft":
        return part.state === "output-available"
          ? `voices ${part.output.versionId}, about ${part.output.estimatedDurationS} s`
          : "voices…";
      case "tool-search_voices":
        return part.state === "output-available" ? `${part.output.count} voices` : "searching…";
      default:
        return part.type;
    }
  });
}

const before = await history();
const transport = new DefaultChatTransport<AdStudioUIMessage>({
  api: `${BASE}/api/ads/${AD_ID}/ui-chat`,
  headers,
});
const stream = await transport.sendMessages({
  chatId: "typed-page",
  messages: [...before, { id: "typed-1", role: "user", parts: [{ type: "text", text: "make the music more upbeat" }] }],
  trigger: "submit-message",
  messageId: undefined,
  abortSignal: undefined,
});
let reply: AdStudioUIMessage | undefined;
for await (const snapshot of readUIMessageStream<AdStudioUIMessage>({ stream })) reply = snapshot;
check(reply !== undefined, "a reply");
check(reply.metadata?.status === "succeeded", "its status in its metadata");
check((reply.metadata?.usage?.totalTokens ?? 0) > 0, "its usage");

const after = await history();
const streamed = JSON.parse(JSON.stringify(reply)); // as JSON: undefined fields dropped
check(isDeepStrictEqual(after.at(-1), streamed), "the history holds the reply as it streamed");
console.log(JSON.stringify({ before: before.map(describe), reply: describe(reply), messages: after.length }));
