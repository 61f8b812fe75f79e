"""An example operator: Databases owning a Secret and a ConfigMap, BackupPolicies
referencing them."""
