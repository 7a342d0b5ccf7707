// What a page generated from /api/schema/ (openapi-typescript) is given, as the AI SDK
// types it, with no cast: `tsc --strict` fails on a schema that says less than, or other
// than, what the server sends (tests/clients/test_schema_types.py).
import type { ModelMessage } from "ai";
import type { components, paths } from "./schema.js";

type Json<T> = T extends { content: { "application/json": infer Body } } ? Body : never;
type Ok<Operation> = Operation extends { responses: { 200: infer Response } } ? Json<Response> : never;

// The model history is the SDK's ModelMessage[]: generateText({ messages }) takes it.
type AdModelPage = Ok<paths["/api/ads/{ad_id}/conversation/model"]["get"]>;
type ConversationModelPage = Ok<paths["/api/conversations/{id}/messages/model/"]["get"]>;
export const adHistory = (page: AdModelPage): ModelMessage[] => page.results;
export const conversationHistory = (page: ConversationModelPage): ModelMessage[] => page.results;

// A request may leave out what has a default: the render of the latest versions.
type RenderRequest = Json<NonNullable<paths["/api/ads/{ad_id}/renders"]["post"]["requestBody"]>>;
export const latestVersions: RenderRequest = {};
export const activeVersions: RenderRequest = { of: "active", music: null };

// A render's timeline is typed: a done one's segments and joins have their seconds.
type Timeline = components["schemas"]["Render"]["timeline"];
export const speechEnds = (timeline: Timeline): number[] =>
  "segments" in timeline
    ? timeline.segments.filter((segment) => segment.kind === "voice").map((segment) => segment.endS)
    : [];

// Each tool's part is one of a message's parts, by its type and state.
type Part = components["schemas"]["UIMessage"]["parts"][number];
type SfxPart = Extract<Part, { type: "tool-create_sfx_draft" }>;
export const sfxFailed = (part: SfxPart): string | undefined =>
  part.state === "output-error" ? part.errorText : undefined;
