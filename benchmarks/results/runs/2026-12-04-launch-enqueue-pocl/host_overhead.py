import json, isthmus
from isthmus import bench
dev = isthmus.device()
rows = bench.overhead(dev, calls=500, rounds=5)
print(json.dumps({r["op"]: [round(r["isthmus_us"], 1), round(r.get("isthmus_out_us", 0), 1), round(r["direct_us"], 1)] for r in rows}))
