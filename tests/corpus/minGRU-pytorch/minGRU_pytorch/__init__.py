from minGRU_pytorch.minGRU import minGRU

