// clients/adstudio-chat.ts from the JSON Schema `manage.py chat_types` prints (stdin):
// the types of this API's UIMessage for useChat, made by json-schema-to-typescript.
// Usage: python manage.py chat_types | node tests/clients/chat-types.mjs > clients/adstudio-chat.ts
import { compile } from "json-schema-to-typescript";
import { text } from "node:stream/consumers";

const schema = JSON.parse(await text(process.stdin));
const banner = `/**
 * The types of AdStudio's chat for the AI SDK (ai 5/6): useChat<AdStudioUIMessage>().
 * Generated from the server's models by \`make chat-types\`: do not edit.
 */
import type { UIMessage } from "ai";`;
const declarations = await compile(schema, "ChatTypes", {
  bannerComment: banner,
  additionalProperties: false,
  strictIndexSignatures: true,
  ignoreMinAndMaxItems: true,
  format: true,
  style: { printWidth: 100 },
});
// Type aliases, not interfaces: UIMessage's parameters need their index signature.
const aliases = `
type Aliased<T> = { [K in keyof T]: T[K] };
export type AdStudioMetadata = Aliased<RunMetadata>;
export type AdStudioDataParts = Aliased<DataParts>;
export type AdStudioTools = { [K in keyof ToolTypes]: Aliased<ToolTypes[K]> };
export type AdStudioUIMessage = UIMessage<AdStudioMetadata, AdStudioDataParts, AdStudioTools>;
`;
process.stdout.write(declarations + aliases);
