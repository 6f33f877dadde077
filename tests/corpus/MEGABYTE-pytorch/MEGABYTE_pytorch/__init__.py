from MEGABYTE_pytorch.megabyte import MEGABYTE
