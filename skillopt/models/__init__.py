"""The model layer: the litellm bridge, call limits, redaction, reply parsing, the embedded
llama.cpp model and the simulated world. Import the modules themselves; nothing is re-exported."""
