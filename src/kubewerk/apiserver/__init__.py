"""The embedded Kubernetes-compatible control plane."""
