"""kubewerk: a Python toolkit for Kubernetes custom resources."""

__version__ = "0.1.0"
