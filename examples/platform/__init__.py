"""A platform of 17 kinds on kubewerk's lifecycle kernel (see README.md here).

``kubewerk run examples.platform:platform`` (or ``examples.platform:manager``) runs it;
the kinds are in :mod:`examples.platform.models`, the operator in
:mod:`examples.platform.main`, the simulated provider in :mod:`examples.platform.provider`.
"""

from .main import manager, platform

__all__ = ["manager", "platform"]
