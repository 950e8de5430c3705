"""PR comment commands (`ci-policy comment`): grammar, access policy and the GitHub gateway."""
