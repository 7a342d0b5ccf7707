// The web client's story with a client generated from /api/schema/ (openapi-typescript
// types, openapi-fetch calls): no casts, so a schema that lies fails `tsc --noEmit`.
import createClient from "openapi-fetch";
import type { components, paths } from "./schema.js";

type EventsPage = components["schemas"]["EventsPage"];

const { BASE, TOKEN } = process.env;
if (!BASE || !TOKEN) throw new Error("BASE and TOKEN are required");
const api = createClient<paths>({ baseUrl: BASE, headers: { Authorization: `Token ${TOKEN}` } });

function check(condition: boolean, what: string): asserts condition {
  if (!condition) throw new Error(`failed: ${what}`);
}

async function untilFinished(runId: string): Promise<EventsPage["events"]> {
  const events: EventsPage["events"] = [];
  let after = 0;
  for (;;) {
    const { data, error } = await api.GET("/api/runs/{id}/events", {
      params: { path: { id: runId }, query: { after, wait: 5 } },
    });
    if (!data) throw new Error(JSON.stringify(error));
    events.push(...data.events);
    after = data.lastSeq;
    if (["succeeded", "failed", "cancelled"].includes(data.runStatus)) return events;
  }
}

const { data: ad, error: adError } = await api.POST("/api/ads/", {
  body: { clientDescription: "Spotify Premium family plan", language: "English", durationSeconds: 30 },
});
if (!ad) throw new Error(JSON.stringify(adError));
check(ad.brief.language === "en", "the language is stored as its code");

const { data: started } = await api.POST("/api/ai/generate", { body: { adId: ad.id } });
if (!started) throw new Error("generate failed");
const generated = await untilFinished(started.runId);
check(generated.some((event) => event.type === "draft.created"), "generate made drafts");

const { data: chatted } = await api.POST("/api/ads/{ad_id}/chat", {
  params: { path: { ad_id: ad.id } },
  body: { message: "make the music more upbeat" },
});
if (!chatted) throw new Error("chat failed");
const events = await untilFinished(chatted.runId);
const created = events.find((event) => event.type === "draft.created");
check(created !== undefined && created.data["kind"] === "music", "chat made a music draft");

const { data: run } = await api.GET("/api/runs/{id}", { params: { path: { id: chatted.runId } } });
check(run !== undefined && run.status === "succeeded" && run.drafts["music"] === "v2", "run says music v2");

const { data: drafts } = await api.GET("/api/ads/{id}/drafts/", {
  params: { path: { id: ad.id }, query: { kind: "music" } },
});
if (!drafts) throw new Error("drafts failed");
const latest = drafts.results[0];
check(latest.version === "v2" && "musicPrompt" in latest.payload, "music v2 in the design's shape");
check(latest.payload.musicPrompt.length > 0, "its prompt");

const { data: activation } = await api.POST("/api/drafts/{id}/activate/", {
  params: { path: { id: latest.id } },
});
check(activation !== undefined && activation.changed && activation.draft.status === "active", "activated");

const { data: state } = await api.GET("/api/ads/{id}/state/", { params: { path: { id: ad.id } } });
check(state !== undefined && state.music.active === "v2" && state.music.archived.includes("v1"), "state");

const { data: cancelled, response } = await api.POST("/api/runs/{id}/cancel", {
  params: { path: { id: chatted.runId } },
});
check(response.status === 202 && cancelled !== undefined && cancelled.status === "succeeded", "cancel");
console.log(JSON.stringify({ ad: ad.id, music: state.music }));
