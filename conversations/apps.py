from django.apps import AppConfig


class ConversationsConfig(AppConfig):
    name = "conversations"
    verbose_name = "Conversations and runs"
