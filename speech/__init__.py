"""Speech: the cast voices read through their own TTS providers, behind one neutral request
and result (``speech.base``), as the LLM providers are behind ``providers.base``."""
