"""The ``dns1035-label`` name rule (Service names: ``ValidateServiceName``)."""

from __future__ import annotations

from kubewerk.core.validation import name_errors, validate_object_meta

DNS1035 = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with "
    "an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
    "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)


def test_a_service_name_must_start_with_a_letter() -> None:
    assert name_errors("web", "dns1035-label") == []
    assert name_errors("1web", "dns1035-label") == [DNS1035]
    assert name_errors("web.example", "dns1035-label") == [DNS1035]
    assert name_errors("1web", "label") == []  # an RFC 1123 label may start with a digit


def test_generate_name_masks_the_trailing_dash() -> None:
    assert name_errors("web-", "dns1035-label", prefix=True) == []
    assert name_errors("9web-", "dns1035-label", prefix=True) == [DNS1035]


def test_object_meta_reports_it_on_metadata_name() -> None:
    errs = validate_object_meta(
        {"name": "1web", "namespace": "default"}, namespaced=True, name_rule="dns1035-label"
    )
    assert [e.message() for e in errs] == [f'metadata.name: Invalid value: "1web": {DNS1035}']
