"""kubewerk's lifecycle kernel: declared phases and transitions, dependencies between
resources, one platform for many kinds, and the event bus (in-process, Redis Streams)."""
