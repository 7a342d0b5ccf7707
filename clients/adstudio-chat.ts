/**
 * The types of AdStudio's chat for the AI SDK (ai 5/6): useChat<AdStudioUIMessage>().
 * Generated from the server's models by `make chat-types`: do not edit.
 */
import type {UIMessage} from "ai";

/**
 * What ``clients/adstudio-chat.ts`` declares: ``UIMessage<RunMetadata, DataParts,
 * ToolTypes>``'s arguments.
 */
export interface ChatTypes {
  dataParts: DataParts;
  metadata: RunMetadata;
  tools: ToolTypes;
}
/**
 * The data parts by name: ``data-<name>`` parts' ``data``.
 */
export interface DataParts {
  brief: BriefData;
  draft: DraftData;
}
/**
 * The brief as the director was given it (a ``data-brief`` part).
 */
export interface BriefData {
  audience?: string;
  client: string;
  context?: string;
  durationSeconds: number;
  language: string;
  market?: string;
}
/**
 * A draft a tool call wrote (a ``data-draft`` part).
 */
export interface DraftData {
  /**
   * The draft's id (GET /api/drafts/{id}/).
   */
  id: string | null;
  kind: "voices" | "music" | "sfx";
  toolCallId: string;
  /**
   * Its label, e.g. "v2".
   */
  version: string;
}
/**
 * An assistant message's ``metadata``: its run from the first chunk; its status,
 * usage and (failed) error from the last.
 */
export interface RunMetadata {
  /**
   * A failed run's error, as the stream said it.
   */
  error?: string;
  runId: string;
  status?: "queued" | "running" | "succeeded" | "failed" | "cancelled";
  usage?: RunUsage;
}
export interface RunUsage {
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
}
/**
 * Each tool's input (what the model sent) and output (what it answered).
 */
export interface ToolTypes {
  create_music_draft: CreateMusicDraftTypes;
  create_sfx_draft: CreateSfxDraftTypes;
  create_voice_draft: CreateVoiceDraftTypes;
  get_current_state: GetCurrentStateTypes;
  search_voices: SearchVoicesTypes;
  set_ad_length: SetAdLengthTypes;
}
export interface CreateMusicDraftTypes {
  input: CreateMusicDraftArgs;
  output: DraftWritten;
}
export interface CreateMusicDraftArgs {
  /**
   * Seconds (default: the ad's)
   */
  duration?: number | null;
  /**
   * Genre, mood, tempo, instruments
   */
  prompt: string;
  provider?: "loudly" | "mubert";
}
/**
 * A create tool's answer: the design's ``{versionId, status}``, and the kind.
 */
export interface DraftWritten {
  kind: "voices" | "music" | "sfx";
  status: "draft";
  /**
   * The new version, e.g. "v2".
   */
  versionId: string;
}
export interface CreateSfxDraftTypes {
  input: CreateSfxDraftArgs;
  output: DraftWritten;
}
export interface CreateSfxDraftArgs {
  /**
   * [] for none
   *
   * @maxItems 10
   */
  prompts: SfxPromptArgs[];
}
export interface SfxPromptArgs {
  description: string;
  /**
   * Seconds (default 3)
   */
  duration?: number | null;
  placement?: SfxPlacementArgs | null;
}
export interface SfxPlacementArgs {
  /**
   * afterVoice: a track index
   */
  index?: number | null;
  type?: "start" | "end" | "afterVoice";
}
export interface CreateVoiceDraftTypes {
  input: CreateVoiceDraftArgs;
  output: VoiceDraftWritten;
}
export interface CreateVoiceDraftArgs {
  /**
   * @minItems 1
   * @maxItems 20
   */
  tracks: VoiceTrackArgs[];
}
export interface VoiceTrackArgs {
  /**
   * Seconds over the track it follows; negative: a gap
   */
  overlap?: number;
  /**
   * "start" or "track-N" (default: previous)
   */
  playAfter?: string | null;
  text: string;
  /**
   * From search_voices.
   */
  voiceId: string;
}
export interface VoiceDraftWritten {
  /**
   * The script's estimated length.
   */
  estimatedDurationS: number;
  kind: "voices" | "music" | "sfx";
  status: "draft";
  /**
   * The new version, e.g. "v2".
   */
  versionId: string;
  /**
   * Present when the script is longer than the ad.
   */
  warnings?: string[];
}
export interface GetCurrentStateTypes {
  input: GetCurrentStateArgs;
  output: CurrentState;
}
export interface GetCurrentStateArgs {}
/**
 * Per kind with a draft, its latest version and the active one.
 */
export interface CurrentState {
  music?: DraftKindState;
  sfx?: DraftKindState;
  voices?: DraftKindState;
}
export interface DraftKindState {
  /**
   * The active version, when one is.
   */
  active?: string;
  /**
   * When the active one is not the latest.
   */
  activeSummary?: string;
  /**
   * Voices: how long the latest version's speech ran in a scratch track of it, when one was rendered (the estimate is the tool's).
   */
  measuredDurationS?: number;
  summary: string;
  /**
   * The latest version.
   */
  versionId: string;
}
export interface SearchVoicesTypes {
  input: SearchVoicesArgs;
  output: VoicesFound;
}
export interface SearchVoicesArgs {
  /**
   * e.g. british, en-AU
   */
  accent?: string | null;
  count?: number;
  gender?: ("male" | "female") | null;
  /**
   * e.g. th, Thai, pt-BR
   */
  language: string;
  /**
   * e.g. warm, news
   */
  style?: string | null;
}
export interface VoicesFound {
  count: number;
  voices: VoiceFound[];
}
/**
 * A voice as the model sees it (``voices.selectors.compact_voice``).
 */
export interface VoiceFound {
  accent?: string;
  age?: string;
  gender?: string;
  id: string;
  language?: string;
  /**
   * When the voices found differ in locale.
   */
  locale?: string;
  name?: string;
  style?: string;
}
export interface SetAdLengthTypes {
  input: SetAdLengthArgs;
  output: AdLengthSet;
}
export interface SetAdLengthArgs {
  durationSeconds: number;
}
export interface AdLengthSet {
  durationSeconds: number;
  previousSeconds: number;
}

type Aliased<T> = { [K in keyof T]: T[K] };
export type AdStudioMetadata = Aliased<RunMetadata>;
export type AdStudioDataParts = Aliased<DataParts>;
export type AdStudioTools = { [K in keyof ToolTypes]: Aliased<ToolTypes[K]> };
export type AdStudioUIMessage = UIMessage<AdStudioMetadata, AdStudioDataParts, AdStudioTools>;
