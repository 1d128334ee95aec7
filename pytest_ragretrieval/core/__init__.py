"""What every stage uses: one-line errors, how values are shown, environment switches, optional packages, users'
code, the plug-in registries, timing, progress, signals, secrets masked."""
