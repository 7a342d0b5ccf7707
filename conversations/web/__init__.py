"""The HTTP side of conversations and runs (``urls.py`` at the app's root routes to it):
generate, chat, runs, cancel and stats (``api``); a run's events as long-polled pages and
Server-Sent Events (``events_api``); a conversation's messages in three shapes
(``history_api``); and the AI SDK's chat transport: the endpoint (``ui_chat_api``), the UI
message stream (``ui_stream``), the history as UI messages (``ui_history``) and their
types (``ui_types``)."""
