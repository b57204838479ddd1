"""DxDispatch models: DirectML's own JSON model format (resources, dispatchables, commands), read,
checked and run with dmljax's operators: ``schema.py`` (the format's JSON schema and its readable
problems), ``model.py`` (resources, dispatchables, the graph, the commands), ``images.py`` (image
resources)."""
