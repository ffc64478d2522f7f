"""Known-bad: not UTF-8 (Latin-1 bytes follow)."""
# café à la crème
def gelu(input, approximate="none"):
    return input
