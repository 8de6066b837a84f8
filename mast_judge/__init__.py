"""Names under which other tools' registries find mast (the import package itself is :mod:`mast`).

Inspect and Inspect Scout name a plugin's objects ``<package>/<name>`` and then look the package
up as a *distribution* (its version goes into each scan's spec). mast's distribution is
``mast-judge`` while its import package is ``mast``, so an object defined under ``mast`` gets a
name (``mast/...``) whose version Scout cannot find, and the scan stops. Objects defined in this
small package are named ``mast_judge/...``, which is the distribution's own name.
"""
