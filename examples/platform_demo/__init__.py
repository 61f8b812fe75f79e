"""A platform of 17 kinds on kubewerk's lifecycle kernel (see README.md here).

``kubewerk run examples.platform_demo:platform`` (or ``examples.platform_demo:manager``)
runs it; the kinds are in :mod:`examples.platform_demo.models`, the operator in
:mod:`examples.platform_demo.main`, the simulated provider in
:mod:`examples.platform_demo.provider`.
"""

from .main import manager, platform

__all__ = ["manager", "platform"]
