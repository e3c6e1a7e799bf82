"""paperlab assets: one sub-package per paper (assets/<slug>/), shared helpers in common/."""
