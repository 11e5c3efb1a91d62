"""Labelling-tool integrations that run as a service (docs/labelling.md).

:mod:`.ml_backend`: a Label Studio ML backend (``paigow label-server``): predictions of the
project's still reading for Label Studio tasks, and the annotations Label Studio sends back
stored as training data.
"""
