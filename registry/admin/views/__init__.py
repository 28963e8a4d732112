"""The extra pages of a versioned entry's admin, one page a module.

Each module adds one page (or one page and the admin action that shares its helpers) to
VersionedEntryAdmin (registry/admin/entries.py) as a ModelAdmin subclass that the admin
combines; its URL is wired in VersionedEntryAdmin.get_urls. The pages only ask and show:
what they change goes through `registry.release` and `registry.authoring.drafts`, which re-check
the user's permission, so a crafted request meets the same rule as a button.

- `entry_page`       what every page shares: the entry (or 404/403), its page URLs, the context, refusals
- `preview`          the draft rendered as a client would get it
- `compare`          any two of draft, labels and versions side by side
- `history`          versions, labels, audit entries and fetch counts (replaces the stock log)
- `publish`          publish the draft (and the "Publish selected drafts" action)
- `release_request`  an editor asks a publisher to release the draft or a version
- `rollout`          percentage rollouts: start, change, complete, stop
- `label`            point a label at a version, or roll it back
- `restore`          overwrite the draft with a published version
"""
