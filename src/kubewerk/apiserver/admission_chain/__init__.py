"""The embedded server's admission chain beyond schema admission.

kube-apiserver runs, for every write: mutating admission webhooks → the kind's
defaulting, pruning and validation → ValidatingAdmissionPolicies and validating
admission webhooks → storage. This package holds what the embedded server needs for
the parts around its synchronous schema admission (``apiserver.admission``):

- :mod:`.registration`: the ``admissionregistration.k8s.io/v1`` kinds
  (Mutating/ValidatingWebhookConfiguration, ValidatingAdmissionPolicy and its
  binding) defaulted and validated as kube-apiserver does;
- :mod:`.httpclient`: a small async HTTPS POST client (asyncio streams + httptools)
  with keep-alive connections per endpoint and caBundle (:class:`~.httpclient.ConnectionPool`);
- :mod:`.webhooks`: which webhooks a request calls, the AdmissionReview they get, the
  checks their answers pass and the error each failure gives;
- :mod:`.typechecking`: ``status.typeChecking`` of ValidatingAdmissionPolicies, as
  kube's status controller writes it;
- :mod:`.chain`: :class:`~.chain.AdmissionChain`, which the ASGI app asks whether a
  write needs the asynchronous path (only when a configuration can select it) and
  which runs that path, ValidatingAdmissionPolicies included (the schema layer's
  engine, params read from storage on each request).

See docs/apiserver.md, "The admission chain".
"""
