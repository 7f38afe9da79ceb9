"""`jobnik-worker new DIR --stage-type TYPE`: a worker project of its own, outside the
Jobnik repository, for one stage type.

The project is the worker template (the repository's worker-boilerplate/, carried in
the SDK's wheel) with its names replaced by the stage type's: the stage type
`tile-render` gives the package `tile_render_worker` and the project, command and image
`tile-render-worker`, so that workers of different stage types never shadow each other.
It takes jobnik-sdk from a wheel in its wheels/, a git URL or a package index
(`SdkSource`), and builds its image from its own directory with its lock file.

    from jobnik_sdk.scaffold import WorkerNames, new_project

    new_project(Path("tile-publish"), WorkerNames.for_stage_type("tile-publish"))
"""

from ._cli import main
from ._errors import ScaffoldError
from ._names import WorkerNames
from ._project import NewProject, new_project
from ._sdk_source import SdkSource

__all__ = ["NewProject", "ScaffoldError", "SdkSource", "WorkerNames", "main", "new_project"]
