"""Admission (validating, mutating) and conversion webhook servers, and policies as data.

See ``kubewerk.webhook.policy`` for policies composed in Python or YAML and compiled to
ValidatingAdmissionPolicy + binding objects.
"""
