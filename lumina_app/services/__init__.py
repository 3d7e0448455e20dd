"""What the UI and the API both call: agents, conversations, runs, health. One visibility
rule (``ConversationLookup.find_visible``), one path for every way in."""
