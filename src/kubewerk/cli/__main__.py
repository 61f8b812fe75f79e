import sys

from kubewerk.cli import main

sys.exit(main())
