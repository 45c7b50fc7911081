"""Analyses of trained models (the papers' figures); needs the ``analysis`` extra."""
