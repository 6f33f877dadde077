"""OpenCV's native file I/O inside a recording (ultralytics/yolov5's
train.py: matplotlib saves results.png through open(), cv2.imread reads
it back for TensorBoard).  Prints what each read found."""
import cv2
import numpy as np
import torch
from PIL import Image

x = torch.ones(8, device="cuda")
Image.fromarray(np.full((6, 5, 3), 9, np.uint8)).save("pil.png")
a = cv2.imread("pil.png")
print("pil.png", None if a is None else (a.shape, int(a[0, 0, 0])))
ok = cv2.imwrite("cv.png", np.full((4, 3, 3), 200, np.uint8))
b = cv2.imread("cv.png")
print("cv.png", ok, None if b is None else (b.shape, int(b[0, 0, 0])))
print("missing", cv2.imread("missing.png"))
print(float(x.sum()))
