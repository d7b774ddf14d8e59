"""The security scan of template.yaml: checkov's findings against the checked-in skip list."""
