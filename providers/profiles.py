"""Provider differences declared as data: one profile per provider.

The adapters read their profile and never ask which provider they are talking to, so a new
OpenAI-compatible provider is a profile plus a settings entry. Each flag says which vendor
behaviour it answers. ``wire`` names the wire format, and so the adapter that speaks it.
"""

from __future__ import annotations

from dataclasses import dataclass

ALL_TOOL_CHOICES = frozenset({"auto", "none", "required"})
# Wire formats: OpenAI chat completions (OpenAICompatProvider) and Anthropic's Messages API
# (AnthropicProvider).
CHAT_COMPLETIONS = "chat_completions"
ANTHROPIC_MESSAGES = "anthropic_messages"


@dataclass(frozen=True)
class ModelRule:
    """Overrides for the models whose name starts with ``prefix`` (longest prefix wins)."""

    prefix: str
    list_content: bool | None = None
    explicit_cache: bool | None = None
    temperature: bool | None = None


@dataclass(frozen=True)
class ModelTraits:
    """What one model accepts, after the profile's model rules are applied."""

    list_content: bool
    explicit_cache: bool
    temperature: bool


@dataclass(frozen=True)
class ProviderProfile:
    name: str
    # The variable holding its key, named in errors (settings read it, docs/providers.md).
    key_env: str
    default_base_url: str  # "" = the SDK's default (api.openai.com)
    default_model: str
    # The wire format the provider speaks (CHAT_COMPLETIONS or ANTHROPIC_MESSAGES).
    wire: str = CHAT_COMPLETIONS
    # Output-token limit sent when the caller sets none (None: send no limit at all).
    default_max_tokens: int | None = None
    # May we stream a request that offers tools at all?
    stream_with_tools: bool = True
    # May we stream when the model may answer with several tool calls at once?
    stream_with_parallel_tools: bool = True
    # Message content as a list of parts ([{"type": "text", ...}]) is accepted.
    list_content: bool = True
    # Explicit prompt-cache markers (cache_control on a content part) are honoured.
    explicit_cache: bool = False
    # Tool schemas must not use $defs/$ref: inline them before sending.
    inline_schema_defs: bool = False
    # Send tools with "strict": true and their schemas in the strict form (closed objects,
    # every property required, optional ones nullable): OpenAI then makes the arguments
    # match the schema. Off unless ADSTUDIO_STRICT_TOOLS names the provider: the strict
    # form is ~110 tokens longer on every call, and OpenAI does not hold parallel calls
    # (three drafts in one reply, as this agent makes them) to the schema.
    strict_tools: bool = False
    # tool_choice values the API accepts; anything else is sent as "auto".
    tool_choices: frozenset[str] = ALL_TOOL_CHOICES
    # Inclusive temperature range the API accepts; values outside are clamped.
    temperature_range: tuple[float, float] = (0.0, 2.0)
    # Name of the output-token limit parameter.
    max_tokens_param: str = "max_tokens"
    # Ask for a final usage chunk with stream_options={"include_usage": true}.
    stream_usage: bool = True
    # Send the assistant's reasoning_content back with it on later requests.
    echo_reasoning_content: bool = False
    # Tool result messages carry the tool's name.
    tool_message_name: bool = False
    # Content of an assistant message that only calls tools: None (null) or "".
    empty_assistant_content: str | None = None
    model_rules: tuple[ModelRule, ...] = ()

    def traits(self, model: str) -> ModelTraits:
        traits = ModelTraits(
            list_content=self.list_content, explicit_cache=self.explicit_cache, temperature=True
        )
        for rule in sorted(self.model_rules, key=lambda r: len(r.prefix)):
            if model.startswith(rule.prefix):
                traits = ModelTraits(
                    list_content=_pick(rule.list_content, traits.list_content),
                    explicit_cache=_pick(rule.explicit_cache, traits.explicit_cache),
                    temperature=_pick(rule.temperature, traits.temperature),
                )
        return traits

    def clamp_temperature(self, value: float) -> float:
        low, high = self.temperature_range
        return min(max(value, low), high)

    def may_stream(self, *, has_tools: bool, parallel_tool_calls: bool | None) -> bool:
        """Whether streaming is safe for this request shape (the caller also asked for it)."""
        if not has_tools:
            return True
        if not self.stream_with_tools:
            return False
        may_run_parallel = parallel_tool_calls is not False
        return self.stream_with_parallel_tools or not may_run_parallel


def _pick(override: bool | None, current: bool) -> bool:
    return current if override is None else override


OPENAI = ProviderProfile(
    name="openai",
    key_env="OPENAI_API_KEY",
    default_base_url="",
    default_model="gpt-4.1-mini",
    # OpenAI deprecated max_tokens for chat completions and its reasoning models reject
    # it ("Use 'max_completion_tokens' instead"); vLLM accepts both names.
    max_tokens_param="max_completion_tokens",
    model_rules=(
        # Reasoning models (o-series, gpt-5) accept only the default temperature and answer
        # 400 "Unsupported value: 'temperature'" to anything else: leave it out.
        ModelRule("o1", temperature=False),
        ModelRule("o3", temperature=False),
        ModelRule("o4", temperature=False),
        ModelRule("gpt-5", temperature=False),
        ModelRule("gpt-6", temperature=False),
    ),
)

QWEN = ProviderProfile(
    name="qwen",
    key_env="DASHSCOPE_API_KEY",
    default_base_url="https://dashscope-intl.aliyuncs.com/compatible-mode/v1",
    default_model="qwen-plus",
    # DashScope streams parallel tool calls with the id repeated on every fragment and
    # fragments of different calls that cannot be told apart reliably; a non-streamed
    # response carries each call whole. Streaming without tools (or with parallel calls
    # turned off) is fine.
    stream_with_parallel_tools=False,
    # Some Qwen models reject content given as a list of parts (see model_rules); plain
    # strings are accepted by all, so list content is only used for cache markers.
    list_content=True,
    # DashScope explicit cache: {"cache_control": {"type": "ephemeral"}} on a content part
    # (not on the message), for the models listed under "explicit cache" in Model Studio's
    # context-cache docs. Other models use the implicit cache only.
    explicit_cache=False,
    # pydantic emits $defs/$ref for nested models (voice tracks); DashScope's function
    # calling does not resolve references, so schemas are sent with definitions inlined.
    inline_schema_defs=True,
    # DashScope compatible mode documents temperature in [0, 2).
    temperature_range=(0.0, 1.99),
    # Send "" rather than null as the content of a tool-calling assistant message: it is
    # what DashScope itself returns for such a message, so the replay is always accepted.
    empty_assistant_content="",
    model_rules=(
        ModelRule("qwen3-max", explicit_cache=True),
        ModelRule("qwen-max", explicit_cache=True),
        ModelRule("qwen-plus", explicit_cache=True),
        ModelRule("qwen-flash", explicit_cache=True),
        ModelRule("qwen3-coder-plus", explicit_cache=True),
        ModelRule("qwen3-coder-flash", explicit_cache=True),
        # Translation models (qwen-mt) take the user text as a plain string only.
        ModelRule("qwen-mt", list_content=False, explicit_cache=False),
    ),
)

KIMI = ProviderProfile(
    name="kimi",
    key_env="MOONSHOT_API_KEY",
    default_base_url="https://api.moonshot.ai/v1",
    default_model="kimi-k2-0905-preview",
    # Moonshot streams tool calls (index may repeat for different ids; handled by the
    # accumulator, which starts a new call on a new id).
    stream_with_tools=True,
    # The text models document string content; list content is for the vision models.
    list_content=False,
    # Moonshot caches context automatically; there are no explicit markers to send.
    explicit_cache=False,
    # Moonshot answers 400 to tool_choice="required" (and to a named function when
    # thinking is on): "auto" and "none" only.
    tool_choices=frozenset({"auto", "none"}),
    # Moonshot documents temperature in [0, 1].
    temperature_range=(0.0, 1.0),
    # Usage arrives inside the last choice; stream_options is not documented by Moonshot.
    stream_usage=False,
    # Thinking models return reasoning_content and answer 400 to a later request whose
    # assistant tool-call message lacks it.
    echo_reasoning_content=True,
    # Moonshot's tool-calling guide sends the function name with each tool result.
    tool_message_name=True,
    # As returned by Moonshot for a tool-calling message.
    empty_assistant_content="",
)

ANTHROPIC = ProviderProfile(
    name="anthropic",
    key_env="ANTHROPIC_API_KEY",
    # The SDK appends /v1/messages: the base URL has no /v1.
    default_base_url="https://api.anthropic.com",
    # claude-sonnet-4-5 is deprecated (end of life 2026-11-30, per the SDK's list).
    default_model="claude-sonnet-4-6",
    wire=ANTHROPIC_MESSAGES,
    # The Messages API requires max_tokens on every request (400 without it); 8192 leaves
    # room for a whole voice draft and is below every current Claude model's output cap.
    default_max_tokens=8192,
    # Tool calls stream as content blocks with their own index: parallel calls are never
    # ambiguous, so streaming is always safe.
    stream_with_tools=True,
    stream_with_parallel_tools=True,
    list_content=True,
    # Prompt caching is explicit: cache_control {"type": "ephemeral"} breakpoints (at most
    # four per request) on the last tool, the system prompt and the newest message block.
    explicit_cache=True,
    # input_schema is JSON Schema: $defs/$ref are resolved by the API.
    inline_schema_defs=False,
    # "auto", "none", and "any" (sent for "required"); parallel calls are turned off with
    # disable_parallel_tool_use on the tool_choice object.
    tool_choices=ALL_TOOL_CHOICES,
    # The Messages API documents temperature in [0, 1].
    temperature_range=(0.0, 1.0),
    max_tokens_param="max_tokens",
    # Usage arrives in the message_start and message_delta events, never on request.
    stream_usage=False,
)

PROFILES: dict[str, ProviderProfile] = {p.name: p for p in (OPENAI, QWEN, KIMI, ANTHROPIC)}
# The offline director: no key, no network (providers/demo.py).
DEMO = "demo"
# What an ad, a route, a fallback chain or strict tools may name.
PROVIDER_NAMES = (*PROFILES, DEMO)
