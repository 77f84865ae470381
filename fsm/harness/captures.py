"""Which decoder reads each folder of the shared recorded captures (``../shared/captures``): the test
suite and the benchmark replay them with it, and the capture tests check that auto-detection agrees."""

PROVIDER_OF_SHAPE = {
    "openai_chat": "openai-chat",
    "deepseek": "openai-chat",
    "groq": "openai-chat",
    "mistral": "openai-chat",
    "openrouter": "openai-chat",
    "gemini_openai_compat": "openai-chat",
    "ollama_openai_compat": "openai-chat",
    "openai_responses": "openai-responses",
    "anthropic": "anthropic",
    "gemini": "gemini",
    "gemini_vertex_partial_args": "gemini",
    "ollama_native": "ollama",
    "bedrock": "bedrock",
    "cohere": "cohere",
}
"""Capture folder name (its wire shape) to the fsm decoder of that shape."""
