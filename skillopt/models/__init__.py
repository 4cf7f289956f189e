"""The model layer: the client (llm), the provider registry (providers), the litellm bridge
(bridge, the only importer of litellm), call limits, redaction, reply parsing, the embedded
llama.cpp model (local) and the simulated models (sim, sim_optimizer, simworld; sim_learner and
sim_clues: the optimizer that learns from the prompts instead of reading the world).
Import the modules themselves; nothing is re-exported."""
