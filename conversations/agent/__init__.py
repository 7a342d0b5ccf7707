"""The agent: the loop that drives a run from its claim to its finish (``loop``), the run's
state and what happens next (``state``), one step, a model call or the tool calls of a
reply (``steps``), the history made provider-valid (``history``) and folded into a
summary when too long (``summary``), the tools it may call (``tools``) and its prompts
(``prompts``, the files in ``prompts/``)."""
