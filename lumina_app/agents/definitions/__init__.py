"""What an agent is: its folder's config.json and prompts read into an
``AgentDefinition`` (``registry``): its memory, embeddings, tools and acp sections,
its title prompt (``titling``), prompt versions. Imports nothing else of ``agents``."""
