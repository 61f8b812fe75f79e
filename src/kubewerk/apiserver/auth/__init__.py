"""Security of the embedded apiserver: who a request is (authentication), whether it may
do what it asks (authorization), and the certificates and tokens behind both.

``types`` holds the interfaces every part shares (``UserInfo``, ``Attributes``,
``Decision``, ``Authorizer``); the other modules implement one concern each.
"""
