"""The tools' specs and registry, their argument types and schemas, and the call pipeline."""
