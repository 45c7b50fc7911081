"""The preset lookup every model's ``from_preset`` shares."""


def preset_config(presets, preset, overrides):
    """``presets[preset]`` updated with the overrides that are not None.

    Raises:
        ValueError: ``preset`` is not one of ``presets``; the message lists them.
    """
    if preset not in presets:
        raise ValueError(f"Unknown preset {preset!r}; choose from {sorted(presets)}.")
    config = dict(presets[preset])
    config.update({k: v for k, v in overrides.items() if v is not None})
    return config
